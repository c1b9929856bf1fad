import { assert, describe, it } from "@effect/vitest"
import { Errors, type Session } from "@deep-research/core"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { readFileSync } from "node:fs"
import { BenchmarkRunner } from "../src/index.js"
import { roleUsage, session, source } from "./fixtures.js"

const platform = Layer.merge(NodeFileSystem.layer, NodePath.layer)

const tasks = [
  { id: 1, topic: "Finance & Business", language: "zh", prompt: "黄金走势" },
  { id: 2, topic: "Finance & Business", language: "en", prompt: "Gold outlook" },
  { id: 3, topic: "Science & Technology", language: "en", prompt: "Battery chemistry" },
  { id: 4, topic: "Health", language: "en", prompt: "Sleep and memory" }
]

const queryText = tasks.map((t) => JSON.stringify(t)).join("\n") + "\n"

/** A completed session whose report cites one retrieved source and one invented one. */
const completedSession = (task: BenchmarkRunner.Task): Session.Session =>
  session({
    id: `task-${task.id}`,
    query: task.prompt,
    markdown: `# ${task.prompt}\n\nFinding [1]. Another [2].\n\n## Sources\n[1] A: https://a.com/${task.id}\n[2] B: https://b.com/invented`,
    sources: [source(`d1-s1`, `https://a.com/${task.id}`, "A", "text")],
    usage: [roleUsage("researcher", 1000 * task.id, 100, 0.01), roleUsage("report", 500, 200, 0.02)]
  })

/** A temporary run directory holding the query file. */
const setup = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "bench-" })
  const queryFile = path.join(dir, "query.jsonl")
  yield* fs.writeFileString(queryFile, queryText)
  return { fs, queryFile, outputDir: path.join(dir, "out"), path }
})

const readArticles = (fs: FileSystem.FileSystem, file: string) =>
  Effect.map(fs.readFileString(file), (text) =>
    text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => Schema.decodeUnknownSync(Schema.parseJson(BenchmarkRunner.Article))(line))
  )

describe("BenchmarkRunner tasks", () => {
  it("decodes a query file and names the line of a bad entry", () => {
    const parsed = BenchmarkRunner.parseTasks(queryText)
    assert.isTrue(Either.isRight(parsed) && parsed.right.length === 4)
    const bad = BenchmarkRunner.parseTasks(`${JSON.stringify(tasks[0])}\n\n{"id": "x", "prompt": 1}\n`, "q.jsonl")
    assert.isTrue(
      Either.isLeft(bad) &&
        bad.left instanceof Errors.ResearchInvalidInput &&
        bad.left.reason.startsWith("q.jsonl, line 3")
    )
    // A missing field is named in one plain line, not the schema's tree.
    const missing = BenchmarkRunner.parseTasks(`{"id": 7, "topic": "t", "prompt": "p"}`, "q.jsonl")
    assert.isTrue(Either.isLeft(missing) && missing.left.reason === "q.jsonl, line 1: language: is missing")
    const repeated = BenchmarkRunner.parseTasks(`${JSON.stringify(tasks[0])}\n${JSON.stringify(tasks[0])}`)
    assert.isTrue(Either.isLeft(repeated) && repeated.left.reason.includes("id 1 repeats"))
  })

  it("reads the shipped DeepResearch Bench query file", () => {
    const file = new URL("../data/deep-research-bench/query.jsonl", import.meta.url)
    const parsed = BenchmarkRunner.parseTasks(readFileSync(file, "utf8"))
    assert.isTrue(Either.isRight(parsed))
    if (Either.isRight(parsed)) {
      assert.strictEqual(parsed.right.length, 100)
      assert.strictEqual(BenchmarkRunner.selectTasks(parsed.right, { languages: ["EN"] }).length, 50)
    }
  })

  it("selects by id, language and topic, then limits", () => {
    const all = tasks.map((t) => new BenchmarkRunner.Task(t))
    const ids = (filter: BenchmarkRunner.Filter) => BenchmarkRunner.selectTasks(all, filter).map((t) => t.id)
    assert.deepStrictEqual(ids({ ids: [4, 2] }), [2, 4])
    assert.deepStrictEqual(ids({ languages: ["en"] }), [2, 3, 4])
    assert.deepStrictEqual(ids({ topics: ["finance & business"] }), [1, 2])
    assert.deepStrictEqual(ids({ languages: ["en"], topics: ["Finance & Business"] }), [2])
    assert.deepStrictEqual(ids({ languages: ["en"], limit: 2 }), [2, 3])
    assert.deepStrictEqual(ids({}), [1, 2, 3, 4])
  })
})

describe("BenchmarkRunner.run", () => {
  it.live("writes the scorer's JSON lines and the per-task table", () =>
    Effect.gen(function* () {
      const { fs, outputDir, path, queryFile } = yield* setup
      const reported = yield* Ref.make<ReadonlyArray<number>>([])
      const summary = yield* BenchmarkRunner.run({
        queryFile,
        outputDir,
        research: (task) => Effect.succeed(completedSession(task)),
        filter: { ids: [1, 3] },
        onTaskFinished: (record) => Ref.update(reported, (ids) => [...ids, record.id])
      })
      assert.deepStrictEqual([...summary.ran].sort(), [1, 3])
      assert.deepStrictEqual([...(yield* Ref.get(reported))].sort(), [1, 3])
      // Lines are appended as tasks finish, in any order.
      const articles = [...(yield* readArticles(fs, path.join(outputDir, "articles.jsonl")))].sort(
        (a, b) => a.id - b.id
      )
      assert.deepStrictEqual(
        articles.map((a) => [a.id, a.prompt]),
        [
          [1, "黄金走势"],
          [3, "Battery chemistry"]
        ]
      )
      assert.include(articles[0]?.article ?? "", "Finding [1].")
      const table = Schema.decodeUnknownSync(Schema.parseJson(BenchmarkRunner.Table))(
        yield* fs.readFileString(path.join(outputDir, "table.json"))
      )
      const row = table.rows[1]
      assert.strictEqual(row?.id, 3)
      assert.strictEqual(row?.tokens, 3000 + 100 + 500 + 200)
      assert.closeTo(row?.costUsd ?? 0, 0.03, 1e-9)
      assert.strictEqual(row?.citations?.unretrievedSources, 1)
      assert.strictEqual(row?.citations?.inlineCitations, 2)
      const markdown = yield* fs.readFileString(path.join(outputDir, "table.md"))
      assert.include(markdown, "| 3 | en | completed |")
      assert.include(markdown, "2 completed, 0 failed")
    }).pipe(Effect.scoped, Effect.provide(platform))
  )

  it.live("records a failed task, goes on, and retries it on the next run", () =>
    Effect.gen(function* () {
      const { fs, outputDir, path, queryFile } = yield* setup
      const first = yield* BenchmarkRunner.run({
        queryFile,
        outputDir,
        concurrency: 4,
        research: (task) =>
          task.id === 2
            ? Effect.fail(new Errors.ProviderQuotaExhausted({ provider: "openai" }))
            : task.id === 3
              ? Effect.succeed(session({ status: "awaiting_clarification", query: task.prompt }))
              : Effect.succeed(completedSession(task))
      })
      assert.deepStrictEqual([...first.failed].sort(), [2, 3])
      const records = first.table.rows
      assert.include(records.find((r) => r.id === 2)?.error ?? "", "quota")
      assert.include(records.find((r) => r.id === 3)?.error ?? "", "awaiting_clarification")
      const articles = yield* readArticles(fs, path.join(outputDir, "articles.jsonl"))
      assert.deepStrictEqual(articles.map((a) => a.id).sort(), [1, 4])
      const second = yield* BenchmarkRunner.run({
        queryFile,
        outputDir,
        research: (task) => Effect.succeed(completedSession(task))
      })
      assert.deepStrictEqual([...second.ran].sort(), [2, 3])
      assert.deepStrictEqual(second.skipped, [1, 4])
      assert.strictEqual(second.table.completed, 4)
    }).pipe(Effect.scoped, Effect.provide(platform))
  )

  it.live("resumes after an interruption without running finished tasks again", () =>
    Effect.gen(function* () {
      const { fs, outputDir, path, queryFile } = yield* setup
      const reachedThird = yield* Deferred.make<BenchmarkRunner.Attempt>()
      const fiber = yield* Effect.fork(
        BenchmarkRunner.run({
          queryFile,
          outputDir,
          concurrency: 1,
          research: (task, attempt) =>
            task.id === 3
              ? Effect.zipRight(Deferred.succeed(reachedThird, attempt), Effect.never)
              : Effect.succeed(completedSession(task))
        })
      )
      const interrupted = yield* Deferred.await(reachedThird)
      yield* Fiber.interrupt(fiber)
      assert.isFalse(interrupted.resuming)
      const afterInterrupt = yield* readArticles(fs, path.join(outputDir, "articles.jsonl"))
      assert.deepStrictEqual(
        afterInterrupt.map((a) => a.id),
        [1, 2]
      )

      const researched = yield* Ref.make<ReadonlyArray<readonly [number, BenchmarkRunner.Attempt]>>([])
      const summary = yield* BenchmarkRunner.run({
        queryFile,
        outputDir,
        concurrency: 1,
        research: (task, attempt) =>
          Effect.as(
            Ref.update(researched, (runs) => [...runs, [task.id, attempt] as const]),
            completedSession(task)
          )
      })
      const runs = yield* Ref.get(researched)
      assert.deepStrictEqual(
        runs.map(([id]) => id),
        [3, 4]
      )
      // The interrupted task continues its session; the new one starts its own.
      assert.deepStrictEqual(runs[0]?.[1], { sessionId: interrupted.sessionId, resuming: true })
      assert.isFalse(runs[1]?.[1].resuming)
      assert.notStrictEqual(runs[1]?.[1].sessionId, interrupted.sessionId)
      assert.deepStrictEqual(summary.skipped, [1, 2])
      const articles = yield* readArticles(fs, path.join(outputDir, "articles.jsonl"))
      assert.deepStrictEqual(
        articles.map((a) => a.id),
        [1, 2, 3, 4]
      )
    }).pipe(Effect.scoped, Effect.provide(platform))
  )

  it.live("repairs an articles file left torn by a crash", () =>
    Effect.gen(function* () {
      const { fs, outputDir, path, queryFile } = yield* setup
      yield* BenchmarkRunner.run({
        queryFile,
        outputDir,
        filter: { ids: [1] },
        research: (task) => Effect.succeed(completedSession(task))
      })
      const articlesFile = path.join(outputDir, "articles.jsonl")
      // A crash after appending task 2's line but before its record, then a half-written line.
      yield* fs.writeFileString(articlesFile, '{"id":2,"prompt":"Gold outlook","article":"x"}\n{"id":3,"pro', {
        flag: "a"
      })
      const researched = yield* Ref.make<ReadonlyArray<number>>([])
      yield* BenchmarkRunner.run({
        queryFile,
        outputDir,
        research: (task) =>
          Effect.as(
            Ref.update(researched, (ids) => [...ids, task.id]),
            completedSession(task)
          )
      })
      assert.deepStrictEqual([...(yield* Ref.get(researched))].sort(), [2, 3, 4])
      const articles = yield* readArticles(fs, articlesFile)
      assert.deepStrictEqual(articles.map((a) => a.id).sort(), [1, 2, 3, 4])
      assert.notInclude(articles.find((a) => a.id === 2)?.article ?? "", "x\n")
      assert.include(articles.find((a) => a.id === 2)?.article ?? "", "# Gold outlook")
    }).pipe(Effect.scoped, Effect.provide(platform))
  )

  it.live("fails clearly on a missing query file", () =>
    Effect.gen(function* () {
      const { outputDir, path } = yield* setup
      const error = yield* Effect.flip(
        BenchmarkRunner.run({
          queryFile: path.join(outputDir, "missing.jsonl"),
          outputDir,
          research: (task) => Effect.succeed(completedSession(task))
        })
      )
      assert.strictEqual(error._tag, "BenchmarkFileError")
      assert.include(error.message, "missing.jsonl")
    }).pipe(Effect.scoped, Effect.provide(platform))
  )
})
