/**
 * The research library's costs on the SQLite store the CLI opens (`<store>/deep-research.db`):
 *  - indexing: sessions of realistic sources saved through the store's `save` until the library holds `--passages`
 *    (100,000) passages; the time a save with 100 new sources takes against the same session saved again (nothing new
 *    to index), and the database's size;
 *  - searching: `SourceLibrary.search` over those passages, p50, p95 and max of `--queries` (60) searches of each kind:
 *    one word and two words that must both occur (what `deep-research search` asks), and a brief's 25 content words of
 *    which any may occur (what a run with `--library` asks), 10 and 24 passages; and that brief's search kept to the
 *    sessions a caller reaches (`reaches`): a tenth of them, and none (the search passes over every match).
 * The text is made of a Zipf-distributed vocabulary of 20,000 words, as prose is: a few words are in most passages,
 * most words in few. Usage: node bench/dist/librarySearch.js [--passages N] [--queries N] [--keep DIR [--search-only]]
 */
import { ResearchConfig, Session, SessionStore, Source, SourceLibrary } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdtempSync, rmSync, statSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { seeded } from "./Pages.js"

const argument = (name: string): string | undefined => {
  const at = process.argv.indexOf(name)
  return at >= 0 ? process.argv[at + 1] : undefined
}

const targetPassages = Number(argument("--passages") ?? 100_000)
const queries = Number(argument("--queries") ?? 60)
const kept = argument("--keep")
/** Searches the library a run with `--keep DIR` left, without filling it again. */
const searchOnly = process.argv.includes("--search-only")

const vocabularySize = 20_000
const vocabulary = Array.from({ length: vocabularySize }, (_, i) => {
  const random = seeded(i + 7)
  const length = 3 + Math.floor(random() * 8)
  let word = ""
  for (let j = 0; j < length; j++) word += String.fromCharCode(97 + Math.floor(random() * 26))
  return word
})

/** A word of rank r with probability proportional to 1 / r (Zipf's law), by inverting the cumulative sum. */
const cumulative = (() => {
  const sums = new Float64Array(vocabularySize)
  let total = 0
  for (let r = 0; r < vocabularySize; r++) {
    total += 1 / (r + 1)
    sums[r] = total
  }
  return sums.map((sum) => sum / total)
})()

const zipfWord = (random: () => number): string => {
  const x = random()
  let low = 0
  let high = vocabularySize - 1
  while (low < high) {
    const middle = (low + high) >> 1
    if ((cumulative[middle] ?? 1) < x) low = middle + 1
    else high = middle
  }
  return vocabulary[low] ?? "word"
}

const prose = (random: () => number, characters: number): string => {
  const words: Array<string> = []
  let size = 0
  while (size < characters) {
    const word = zipfWord(random)
    words.push(word)
    size += word.length + 1
  }
  return words.join(" ")
}

/** One passage a source (1,000 characters: under the passage size), `sources` a session. */
const sessionOf = (n: number, sources: number): Session.Session =>
  new Session.Session({
    version: Session.currentVersion,
    id: `bench-${n}`,
    query: `Question ${n}`,
    createdAt: 1_700_000_000_000 + n,
    updatedAt: 1_700_000_000_000 + n,
    config: ResearchConfig.defaults,
    status: "completed",
    rounds: [],
    sources: Array.from({ length: sources }, (_, s) => {
      const random = seeded(n * 1_000 + s + 1)
      return new Source.Source({
        id: `r1-d1-s${s + 1}`,
        url: `https://example.org/${n}/${s}`,
        title: prose(random, 40),
        content: prose(random, 1_000),
        provider: "bench",
        quality: "medium",
        retrievedAt: 1,
        rawLength: 1_000
      })
    }),
    metrics: [],
    usage: []
  })

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

const summary = (values: ReadonlyArray<number>) => ({
  p50: Math.round(percentile(values, 50) * 100) / 100,
  p95: Math.round(percentile(values, 95) * 100) / 100,
  max: Math.round(Math.max(...values) * 100) / 100
})

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const started = performance.now()
    const value = yield* effect
    return { value, millis: performance.now() - started }
  })

const program = Effect.gen(function* () {
  const folder = kept ?? mkdtempSync(path.join(os.tmpdir(), "deep-research-library-bench-"))
  const file = SqlSessionStore.databaseFile(folder)
  const context = yield* Layer.build(Layer.orDie(SqlSessionStore.layerSqlite(file)))
  const store = Context.get(context, SessionStore.SessionStore)
  const library = Context.get(context, SourceLibrary.SourceLibrary)
  const perSession = 100
  const sessions = Math.ceil(targetPassages / perSession)
  const filled = performance.now()
  const firstSaves: Array<number> = []
  const againSaves: Array<number> = []
  for (let n = 0; n < (searchOnly ? 0 : sessions); n++) {
    const session = sessionOf(n, perSession)
    firstSaves.push((yield* timed(store.save(session))).millis)
    // Every tenth session saved again, as a run's next checkpoint saves it: nothing new to index.
    if (n % 10 === 0) againSaves.push((yield* timed(store.save(session))).millis)
    if (n % 100 === 99) process.stderr.write(`librarySearch: ${(n + 1) * perSession} passages\n`)
  }
  const fillSeconds = (performance.now() - filled) / 1_000
  const random = seeded(424242)
  // Words of middle rank (as a user's distinctive search words are): neither in every passage nor in none.
  const middleWord = () => vocabulary[50 + Math.floor(random() * 2_000)] ?? "word"
  const kinds = {
    allTwoWords: { terms: () => `${middleWord()} ${middleWord()}`, options: { limit: 10 } },
    allOneWord: { terms: () => middleWord(), options: { limit: 10 } },
    // A brief's content words once common words are left out: 25 of ranks 20 to 5,000.
    anyBriefWords: {
      terms: () => Array.from({ length: 25 }, () => vocabulary[20 + Math.floor(random() * 4_980)]).join(" "),
      options: { limit: 24, match: "any" as const }
    },
    // As a caller's run on a shared server searches: its sessions' passages only (the test answers at once).
    anyBriefWordsReachingTenth: {
      terms: () => Array.from({ length: 25 }, () => vocabulary[20 + Math.floor(random() * 4_980)]).join(" "),
      options: { limit: 24, match: "any" as const, reaches: (id: string) => Effect.succeed(id.endsWith("7")) }
    },
    anyBriefWordsReachingNone: {
      terms: () => Array.from({ length: 25 }, () => vocabulary[20 + Math.floor(random() * 4_980)]).join(" "),
      options: { limit: 24, match: "any" as const, reaches: () => Effect.succeed(false) }
    }
  }
  const searches: Record<string, unknown> = {}
  for (const [name, kind] of Object.entries(kinds)) {
    const times: Array<number> = []
    let hits = 0
    for (let q = 0; q < queries; q++) {
      const { millis, value } = yield* timed(Effect.orDie(library.search(kind.terms(), kind.options)))
      times.push(millis)
      hits += value.length
    }
    searches[name] = { ...summary(times), meanHits: Math.round((hits / queries) * 10) / 10 }
  }
  const result = {
    passages: sessions * perSession,
    sessions,
    fillSeconds: Math.round(fillSeconds * 10) / 10,
    ...(searchOnly
      ? {}
      : { saveWith100NewSourcesMillis: summary(firstSaves), saveAgainNothingNewMillis: summary(againSaves) }),
    databaseMegabytes: Math.round((statSync(file).size / 1024 / 1024) * 10) / 10,
    searchMillis: searches,
    node: process.version
  }
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  if (kept === undefined) rmSync(folder, { recursive: true, force: true })
})

Effect.runPromise(Effect.scoped(program)).catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`)
  process.exit(1)
})
