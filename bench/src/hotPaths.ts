/**
 * Benchmark 5, the library's own hot paths, in process and without a backend:
 *  - dedup and novelty (core's `Novelty` index) over 1k, 2k, 5k and 10k sources, to show the growth is not quadratic,
 *    and what the index holds for 10k sources (with `--expose-gc`);
 *  - token estimation and truncation of a 1 MB prompt (`Tokens`, `Truncation`), sectioned and as a conversation;
 *  - saving and loading a large session through the providers' `SqlSessionStore` (SQLite).
 * Each figure is the median of 5 runs. Usage: node --expose-gc bench/dist/hotPaths.js
 */
import { LanguageModel, Novelty, ResearchConfig, Session, SessionStore, Tokens, Truncation } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { mkdtemp, rm, stat } from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import * as Measure from "./Measure.js"
import { seeded } from "./Pages.js"

const repeats = 5

// A vocabulary large enough that unrelated texts share few 5-character shingles, as real pages on one topic do.
const vocabulary = Array.from({ length: 4_000 }, (_, i) => {
  const random = seeded(i + 1)
  const length = 3 + Math.floor(random() * 8)
  let word = ""
  for (let j = 0; j < length; j++) word += String.fromCharCode(97 + Math.floor(random() * 26))
  return word
})

const prose = (random: () => number, characters: number): string => {
  const words: Array<string> = []
  let size = 0
  while (size < characters) {
    const word = vocabulary[Math.floor(random() * vocabulary.length)] ?? "word"
    words.push(word)
    size += word.length + 1
  }
  return words.join(" ")
}

/**
 * Sources as researchers see them (summaries of about 1,500 characters): 80% new, 10% near-duplicates of an earlier
 * one (a few words changed), 5% the same URL with tracking parameters, 5% the same long title.
 */
const sources = (count: number): ReadonlyArray<Novelty.Document> => {
  const random = seeded(count)
  const out: Array<Novelty.Document> = []
  for (let i = 0; i < count; i++) {
    const roll = random()
    const earlier = out[Math.floor(random() * out.length)]
    if (earlier !== undefined && roll < 0.1) {
      const words = earlier.text.split(" ")
      for (let k = 0; k < 5; k++) words[Math.floor(random() * words.length)] = "changed"
      out.push({ id: `s${i}`, url: `https://mirror${i}.example.org/a`, title: `Mirror ${i}`, text: words.join(" ") })
    } else if (earlier !== undefined && roll < 0.15) {
      out.push({ ...earlier, id: `s${i}`, url: `${earlier.url}?utm_source=feed&ref_src=x` })
    } else if (earlier !== undefined && roll < 0.2) {
      out.push({ ...earlier, id: `s${i}`, url: `https://other${i}.example.net/p`, text: prose(random, 1_500) })
    } else {
      out.push({
        id: `s${i}`,
        url: `https://site${i % 300}.example.com/articles/${i}`,
        title: `Article number ${i} on a subject of its own`,
        text: prose(random, 1_200 + Math.floor(random() * 600))
      })
    }
  }
  return out
}

const noveltyBenchmark = () =>
  [1_000, 2_000, 5_000, 10_000].map((count) => {
    const documents = sources(count)
    const verdicts = { unique: 0, url: 0, title: 0, content: 0 }
    const times: Array<number> = []
    for (let r = 0; r < repeats; r++) {
      const index = Novelty.make()
      const { millis } = Measure.time(() => {
        for (const document of documents) {
          const verdict = index.insert(document)
          if (r === 0) {
            if (verdict._tag === "Unique") verdicts.unique++
            else verdicts[verdict.reason]++
          }
        }
      })
      times.push(millis)
    }
    const median = Measure.median(times)
    return {
      sources: count,
      medianMillis: Measure.round(median, 1),
      microsPerSource: Measure.round((median * 1000) / count, 1),
      verdicts
    }
  })

const oneMegabyte = 1_048_576

const tokensBenchmark = () => {
  const random = seeded(7)
  const text = prose(random, oneMegabyte)
  const estimate = Measure.median(
    Array.from({ length: repeats }, () => Measure.time(() => Tokens.estimateTokens(text)).millis)
  )
  // A report prompt of 1 MB: instructions, question and brief, then 200 source blocks of about 5 KB, cut to 100k
  // tokens (a 128k window less room for the answer).
  const sections: Array<Truncation.Section> = [
    { name: "instructions", kind: "instruction", content: prose(random, 4_000) },
    { name: "question", kind: "question", content: prose(random, 200) },
    { name: "brief", kind: "brief", content: prose(random, 1_500) },
    ...Array.from({ length: 200 }, (_, i) => ({
      name: `source ${i}`,
      kind: "source" as const,
      content: prose(random, 4_000 + Math.floor(random() * 2_000)),
      quality: random()
    }))
  ]
  const sectionChars = sections.reduce((n, s) => n + s.content.length, 0)
  const target = 100_000
  const sectioned = Array.from({ length: repeats }, () =>
    Measure.time(() => Truncation.truncateSections(sections, target))
  )
  // A researcher conversation of 1 MB: the task, then 100 turns of a tool call and a 10 KB tool result.
  const messages: Array<LanguageModel.Message> = [LanguageModel.user(prose(random, 2_000))]
  for (let i = 0; i < 100; i++) {
    const call = new LanguageModel.ToolCall({ id: `call${i}`, name: "webSearch", arguments: { queries: [`q${i}`] } })
    messages.push(LanguageModel.assistant("", [call]), LanguageModel.toolResult(call, prose(random, 10_000)))
  }
  messages.push(LanguageModel.user("Write your findings now."))
  const request: LanguageModel.GenerateRequest = { system: prose(random, 3_000), messages }
  const requestTokens = Tokens.estimateRequestTokens(request)
  const estimateRequest = Measure.median(
    Array.from({ length: repeats }, () => Measure.time(() => Tokens.estimateRequestTokens(request)).millis)
  )
  const conversation = Array.from({ length: repeats }, () =>
    Measure.time(() => Truncation.truncateConversation(request, target))
  )
  return {
    estimateTokens1MB: { characters: text.length, medianMillis: Measure.round(estimate, 3) },
    estimateRequestTokens1MB: { tokens: requestTokens, medianMillis: Measure.round(estimateRequest, 2) },
    truncateSections1MB: {
      characters: sectionChars,
      targetTokens: target,
      resultTokens: Truncation.sectionTokens(sectioned[0]?.value ?? []),
      medianMillis: Measure.round(Measure.median(sectioned.map((s) => s.millis)), 2)
    },
    truncateConversation1MB: {
      tokens: requestTokens,
      targetTokens: target,
      resultTokens: Tokens.estimateRequestTokens(conversation[0]?.value ?? request),
      medianMillis: Measure.round(Measure.median(conversation.map((s) => s.millis)), 2)
    }
  }
}

/** A session at the end of a long run: 6 rounds of 5 topics, 300 summarised sources, a 40 KB report. */
const largeSession = (): Session.Session => {
  const random = seeded(11)
  const rounds = Array.from({ length: 6 }, (_, r) => {
    const ids = Array.from({ length: 5 }, (_, d) => `r${r + 1}-d${d + 1}`)
    return {
      round: r + 1,
      reflection: prose(random, 600),
      directives: ids.map((id) => ({
        id,
        round: r + 1,
        directive: { topic: prose(random, 500), perspective: "analyst", evidenceNeeded: "figures", priority: 1 }
      })),
      results: ids.map((id) => ({
        directiveId: id,
        status: "completed",
        findings: prose(random, 8_000),
        supervisorSummary: prose(random, 1_400),
        sourceIds: Array.from({ length: 10 }, (_, s) => `${id}-s${s + 1}`),
        stopReason: "complete",
        toolCalls: 8,
        turns: 6,
        compressed: true,
        usage: { inputTokens: 40_000, outputTokens: 3_000 }
      })),
      deferred: [],
      completed: true
    }
  })
  const sources = rounds.flatMap((round) =>
    round.directives.flatMap((directive) =>
      Array.from({ length: 10 }, (_, s) => ({
        id: `${directive.id}-s${s + 1}`,
        url: `https://example.org/${directive.id}/${s}`,
        title: prose(random, 60),
        content: prose(random, 2_000),
        summary: { summary: prose(random, 1_500), excerpts: Array.from({ length: 5 }, () => prose(random, 200)) },
        provider: "tavily",
        quality: "medium",
        retrievedAt: 1_760_000_000_000,
        directiveId: directive.id,
        rawLength: 12_000
      }))
    )
  )
  return Schema.decodeUnknownSync(Session.Session)({
    version: Session.currentVersion,
    id: "dr-bench-large-session",
    query: prose(random, 200),
    createdAt: 1_760_000_000_000,
    updatedAt: 1_760_000_600_000,
    config: Schema.encodeSync(ResearchConfig.ResearchConfig)(ResearchConfig.defaults),
    status: "completed",
    brief: {
      brief: prose(random, 1_500),
      scope: { include: ["a"], exclude: [] },
      sourcePreferences: ["primary"],
      language: "English"
    },
    rounds,
    sources,
    report: {
      title: "Report",
      markdown: prose(random, 40_000),
      citations: sources.slice(0, 60).map((s, i) => ({ number: i + 1, sourceId: s.id, url: s.url, title: s.title })),
      language: "English",
      droppedCitations: 0
    },
    metrics: [],
    usage: []
  })
}

const storeBenchmark = Effect.gen(function* () {
  const directory = yield* Effect.acquireRelease(
    Effect.promise(() => mkdtemp(path.join(os.tmpdir(), "deep-research-bench-store-"))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  )
  const store = yield* Effect.provide(
    SessionStore.SessionStore,
    Layer.orDie(SqlSessionStore.layerSqlite(SqlSessionStore.databaseFile(directory)))
  )
  const session = largeSession()
  const saves: Array<number> = []
  const loads: Array<number> = []
  for (let r = 0; r < repeats; r++) {
    const saveStart = performance.now()
    yield* Effect.orDie(store.save(session))
    saves.push(performance.now() - saveStart)
    const loadStart = performance.now()
    const loaded = yield* Effect.orDie(store.load(session.id))
    loads.push(performance.now() - loadStart)
    if (loaded.sources.length !== session.sources.length)
      return yield* Effect.dieMessage("the session did not load back")
  }
  const file = yield* Effect.promise(() => stat(SqlSessionStore.databaseFile(directory)))
  return {
    rounds: session.rounds.length,
    sources: session.sources.length,
    fileBytes: file.size,
    saveMedianMillis: Measure.round(Measure.median(saves), 1),
    loadMedianMillis: Measure.round(Measure.median(loads), 1)
  }
})

/**
 * What an index holds for 10,000 sources (the typed arrays of its shingles, `process.memoryUsage().arrayBuffers`),
 * measured between full collections when the script runs with `--expose-gc` (as `npm run bench` runs it).
 */
const noveltyHeldMiB = async (): Promise<number | undefined> => {
  const collect = Reflect.get(globalThis, "gc")
  if (typeof collect !== "function") return undefined
  const settled = async () => {
    collect()
    // Array buffers are freed by a sweep that runs after the collection, off the main thread.
    await new Promise((resolve) => setTimeout(resolve, 300))
    collect()
    await new Promise((resolve) => setTimeout(resolve, 300))
    return process.memoryUsage().arrayBuffers
  }
  const documents = sources(10_000)
  const before = await settled()
  const index = Novelty.make()
  for (const document of documents) index.insert(document)
  const held = (await settled()) - before
  return index.size() > 0 ? Measure.round(held / 1_048_576, 1) : undefined
}

const result = {
  benchmark: "hotPaths",
  machine: Measure.machine(),
  repeats,
  novelty: noveltyBenchmark(),
  noveltyHeldMiBFor10000Sources: await noveltyHeldMiB(),
  tokens: tokensBenchmark(),
  sessionStore: await Effect.runPromise(Effect.scoped(storeBenchmark))
}
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
