/**
 * The session store's own costs, on the SQLite store the CLI opens (`<store>/deep-research.db`):
 *  - `--fill DIR [--sessions N]`: N (10,000) realistic completed sessions saved through the store's `save` into the
 *    store folder DIR (for timing `deep-research list --store DIR` as a whole process afterwards);
 *  - `--list DIR`: the store's `list` alone on that store, median and range of 7 calls in one process;
 *  - `--cold DIR`: in fresh processes (7), the time to build the store's layer on the existing database, and its first
 *    `list` and first `load` after it;
 *  - `--checkpoint`: a checkpoint's cost, the save of a mid-run session (3 rounds of 5 topics, 150 sources, no report)
 *    as a run saves it after each step, 60 saves into a fresh store: p50, p99, max;
 *  - `--synchronous`: the same session's row written with the raw libSQL client under `synchronous=FULL` and
 *    `NORMAL` (WAL mode both), by turns, to show what FULL costs a checkpoint.
 * Usage: node bench/dist/sessionStore.js --fill DIR | --list DIR | --cold DIR | --checkpoint | --synchronous
 */
import { ResearchConfig, Session, SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { pathToFileURL } from "node:url"
import * as Measure from "./Measure.js"
import { seeded } from "./Pages.js"

/** The store under test, in a store folder: the only line that differs for another store. */
const storeLayer = (directory: string): Layer.Layer<SessionStore.SessionStore> =>
  Layer.orDie(SqlSessionStore.layerSqlite(SqlSessionStore.databaseFile(directory)))

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

/** A session of `roundCount` rounds of 5 topics, 10 sources a topic; completed with a report or running without. */
const session = (
  seed: number,
  shape: { readonly rounds: number; readonly completed: boolean; readonly scale: number }
): Session.Session => {
  const random = seeded(seed)
  const scaled = (characters: number) => Math.max(20, Math.round(characters * shape.scale))
  const rounds = Array.from({ length: shape.rounds }, (_, r) => {
    const ids = Array.from({ length: 5 }, (_, d) => `r${r + 1}-d${d + 1}`)
    return {
      round: r + 1,
      reflection: prose(random, scaled(600)),
      directives: ids.map((id) => ({
        id,
        round: r + 1,
        directive: { topic: prose(random, 200), perspective: "analyst", evidenceNeeded: "figures", priority: 1 }
      })),
      results: ids.map((id) => ({
        directiveId: id,
        status: "completed",
        findings: prose(random, scaled(8_000)),
        supervisorSummary: prose(random, scaled(1_400)),
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
        url: `https://example.org/${seed}/${directive.id}/${s}`,
        title: prose(random, 60),
        content: prose(random, scaled(2_000)),
        summary: {
          summary: prose(random, scaled(1_500)),
          excerpts: Array.from({ length: 3 }, () => prose(random, scaled(200)))
        },
        provider: "tavily",
        quality: "medium",
        retrievedAt: 1_760_000_000_000,
        directiveId: directive.id,
        rawLength: 12_000
      }))
    )
  )
  const createdAt = 1_760_000_000_000 + seed * 60_000
  return Schema.decodeUnknownSync(Session.Session)({
    version: Session.currentVersion,
    id: `dr-bench-${String(seed).padStart(6, "0")}`,
    query: prose(random, 120),
    createdAt,
    updatedAt: createdAt + 600_000,
    config: Schema.encodeSync(ResearchConfig.ResearchConfig)(ResearchConfig.defaults),
    status: shape.completed ? "completed" : "running",
    brief: {
      brief: prose(random, 1_200),
      scope: { include: ["a"], exclude: [] },
      sourcePreferences: ["primary"],
      language: "English"
    },
    rounds,
    sources,
    ...(shape.completed
      ? {
          report: {
            title: "Report",
            markdown: prose(random, scaled(40_000)),
            citations: sources
              .slice(0, 30)
              .map((s, i) => ({ number: i + 1, sourceId: s.id, url: s.url, title: s.title })),
            language: "English",
            droppedCitations: 0
          }
        }
      : {}),
    metrics: [],
    usage: []
  })
}

/** A completed session of 1 round, 50 sources and a 4 KB report: about 60 KB of JSON. */
const listed = (seed: number) => session(seed, { rounds: 1, completed: true, scale: 0.1 })
/** A run between steps: 3 rounds of 5 topics, 150 sources with their summaries, no report yet. */
const midRun = () => session(7, { rounds: 3, completed: false, scale: 1 })

const bytesOf = (value: Session.Session) => Buffer.byteLength(JSON.stringify(Schema.encodeSync(Session.Session)(value)))

const summary = (millis: ReadonlyArray<number>) => {
  const sorted = [...millis].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0
  return {
    count: sorted.length,
    p50: Measure.round(at(0.5), 2),
    p99: Measure.round(at(0.99), 2),
    min: Measure.round(sorted[0] ?? 0, 2),
    max: Measure.round(sorted[sorted.length - 1] ?? 0, 2)
  }
}

const withStore = <A>(directory: string, use: (store: SessionStore.Service) => Effect.Effect<A>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(Layer.build(storeLayer(directory)), (context) =>
        use(Context.get(context, SessionStore.SessionStore))
      )
    )
  )

const fill = (directory: string, count: number) =>
  withStore(directory, (store) =>
    Effect.gen(function* () {
      const start = performance.now()
      // One seed's text, reused with each id and query changed: generating 10,000 sessions' prose is not the figure.
      const template = listed(1)
      // Saved 16 at once, as a busy server's runs save theirs.
      yield* Effect.forEach(
        Array.from({ length: count }, (_, i) => i),
        (i) =>
          Effect.orDie(
            store.save(
              Session.Session.make({
                ...template,
                id: `dr-bench-${String(i).padStart(6, "0")}`,
                query: `question ${i}: ${template.query}`,
                createdAt: template.createdAt + i * 60_000,
                updatedAt: template.updatedAt + i * 60_000
              })
            )
          ),
        { concurrency: 16, discard: true }
      )
      return {
        sessions: count,
        sessionBytes: bytesOf(template),
        fillSeconds: Measure.round((performance.now() - start) / 1_000, 1)
      }
    })
  )

const list = (directory: string) =>
  withStore(directory, (store) =>
    Effect.gen(function* () {
      const times: Array<number> = []
      let listedCount = 0
      for (let r = 0; r < 7; r++) {
        const start = performance.now()
        listedCount = (yield* store.list).length
        times.push(performance.now() - start)
      }
      return { listed: listedCount, ...summary(times) }
    })
  )

const coldOnce = (directory: string) => {
  const start = performance.now()
  return Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* Layer.build(storeLayer(directory))
        const opened = performance.now()
        const store = Context.get(context, SessionStore.SessionStore)
        const all = yield* store.list
        const listedAt = performance.now()
        yield* Effect.orDie(store.load(all[0]?.id ?? ""))
        const loadedAt = performance.now()
        return { openMillis: opened - start, firstListMillis: listedAt - opened, firstLoadMillis: loadedAt - listedAt }
      })
    )
  )
}

const cold = (directory: string) => {
  const runs = Array.from({ length: 7 }, () => {
    const out = execFileSync(process.execPath, [process.argv[1] ?? "", "--cold-once", directory], { encoding: "utf8" })
    return JSON.parse(out) as { openMillis: number; firstListMillis: number; firstLoadMillis: number }
  })
  return {
    open: summary(runs.map((r) => r.openMillis)),
    firstList: summary(runs.map((r) => r.firstListMillis)),
    firstLoad: summary(runs.map((r) => r.firstLoadMillis))
  }
}

const checkpoint = () => {
  const directory = mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-checkpoint-"))
  return withStore(directory, (store) =>
    Effect.gen(function* () {
      const value = midRun()
      const times: Array<number> = []
      for (let r = 0; r < 60; r++) {
        const next = Session.Session.make({ ...value, updatedAt: value.updatedAt + r })
        const start = performance.now()
        yield* Effect.orDie(store.save(next))
        times.push(performance.now() - start)
      }
      return { sessionBytes: bytesOf(value), save: summary(times.slice(5)) }
    })
  ).finally(() => rmSync(directory, { recursive: true, force: true }))
}

/** The raw libSQL client, one table of (id, json): an upsert in a transaction, as the store's save is at its core. */
const synchronous = async () => {
  const { createClient } = await import("@libsql/client")
  const json = JSON.stringify(Schema.encodeSync(Session.Session)(midRun()))
  const directory = mkdtempSync(path.join(os.tmpdir(), "deep-research-bench-sync-"))
  const clients = await Promise.all(
    (["FULL", "NORMAL"] as const).map(async (mode) => {
      const client = createClient({ url: pathToFileURL(path.join(directory, `${mode}.db`)).toString() })
      await client.execute("PRAGMA journal_mode = WAL")
      await client.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, json TEXT NOT NULL)")
      return { mode, client, times: [] as Array<number> }
    })
  )
  for (let r = 0; r < 60; r++) {
    for (const entry of clients) {
      // Set on each turn: the client may open a new connection after a transaction.
      await entry.client.execute(`PRAGMA synchronous = ${entry.mode}`)
      const start = performance.now()
      await entry.client.batch(
        [
          {
            sql: "INSERT INTO sessions (id, json) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET json = excluded.json",
            args: ["dr-1", `${json} `.slice(0, json.length - (r % 2))]
          }
        ],
        "write"
      )
      if (r >= 5) entry.times.push(performance.now() - start)
    }
  }
  for (const entry of clients) entry.client.close()
  rmSync(directory, { recursive: true, force: true })
  return { sessionBytes: json.length, full: summary(clients[0]?.times ?? []), normal: summary(clients[1]?.times ?? []) }
}

const main = async () => {
  const args = process.argv.slice(2)
  const option = (name: string) => {
    const at = args.indexOf(name)
    return at >= 0 ? args[at + 1] : undefined
  }
  const machine = { load: os.loadavg().map((l) => Measure.round(l, 2)) }
  const fillDir = option("--fill")
  const listDir = option("--list")
  const coldDir = option("--cold")
  const coldOnceDir = option("--cold-once")
  if (coldOnceDir !== undefined) {
    process.stdout.write(JSON.stringify(await coldOnce(coldOnceDir)))
    return
  }
  const result =
    fillDir !== undefined
      ? await fill(fillDir, Number(option("--sessions") ?? "10000"))
      : listDir !== undefined
        ? await list(listDir)
        : coldDir !== undefined
          ? cold(coldDir)
          : args.includes("--checkpoint")
            ? await checkpoint()
            : args.includes("--synchronous")
              ? await synchronous()
              : undefined
  if (result === undefined)
    throw new Error("usage: --fill DIR | --list DIR | --cold DIR | --checkpoint | --synchronous")
  process.stdout.write(`${JSON.stringify({ benchmark: "sessionStore", args, ...machine, result }, null, 2)}\n`)
}

void main()
