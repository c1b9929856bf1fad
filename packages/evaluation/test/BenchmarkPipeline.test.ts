// The benchmark runner over core's real pipeline, on the testing layers: scripted models, a static web and a memory
// session store.
import { assert, describe, it } from "@effect/vitest"
import { LanguageModel, Pipeline, SessionStore, Summarizer } from "@deep-research/core"
import { MemorySessionStore, ScriptedModel, StaticWeb } from "@deep-research/core/testing"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { BenchmarkRunner } from "../src/index.js"

const keywords = ["ALPHA", "BRAVO"] as const

const urlOf = (keyword: string) => `https://${keyword.toLowerCase()}.example.org/facts`

const textOf = (request: LanguageModel.GenerateRequest): string =>
  [request.system ?? "", ...request.messages.map((m) => m.content)].join("\n")

const keywordIn = (request: LanguageModel.GenerateRequest): string =>
  keywords.find((keyword) => textOf(request).includes(keyword)) ?? "UNKNOWN"

const hasAnswered = (request: LanguageModel.GenerateRequest) => request.messages.some((m) => m._tag === "assistant")

const scripts: ScriptedModel.RouterScripts = {
  default: ["unexpected call"],
  roles: {
    clarification: [
      ScriptedModel.json({ needClarification: false, question: "", verification: "Research the measurement." })
    ],
    brief: (request) =>
      ScriptedModel.json({
        brief: `The latest measurement of ${keywordIn(request)} and who made it.`,
        scope: { include: ["measurements"], exclude: [] },
        sourcePreferences: ["the measuring institute"],
        language: "English"
      }),
    supervisor: (request) =>
      hasAnswered(request)
        ? ScriptedModel.toolCalls({ name: "researchComplete", arguments: {} })
        : ScriptedModel.toolCalls({
            name: "conductResearch",
            arguments: {
              topic: `Investigate ${keywordIn(request)}: the latest measurement and who made it.`,
              perspective: "measurements",
              evidenceNeeded: "the primary measurement",
              priority: 1
            }
          }),
    researcher: (request) =>
      hasAnswered(request)
        ? ScriptedModel.toolCalls({
            name: "researchComplete",
            arguments: { summary: `${keywordIn(request)} was measured at 42 units in 2024 [1].` }
          })
        : ScriptedModel.toolCalls({ name: "webSearch", arguments: { queries: [`${keywordIn(request)} facts`] } }),
    compression: (request) =>
      [
        "## Findings",
        `${keywordIn(request)} was measured at 42 units in 2024 by its institute [1].`,
        "",
        "## Supervisor brief",
        "Covered: the measurement. Confidence: medium. Gaps: none."
      ].join("\n"),
    summarization: [ScriptedModel.json({ summary: "summary", excerpts: [] })],
    report: (request) =>
      `# ${keywordIn(request)}\n\n${keywordIn(request)} was measured at 42 units in 2024 by its institute [1].`
  }
}

const world = Layer.mergeAll(
  Layer.provideMerge(Summarizer.layer, ScriptedModel.layerRouter(scripts)),
  StaticWeb.layer({
    pages: keywords.map((keyword) => ({
      url: urlOf(keyword),
      title: `Facts about ${keyword}`,
      content: `${keyword} was measured at 42 units in 2024 by the ${keyword} institute.`
    })),
    route: (query) => keywords.filter((keyword) => query.toUpperCase().includes(keyword)).map(urlOf)
  }),
  MemorySessionStore.layer,
  NodeFileSystem.layer,
  NodePath.layer
)

const setup = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "bench-pipeline-" })
  const queryFile = path.join(dir, "query.jsonl")
  yield* fs.writeFileString(
    queryFile,
    keywords
      .map((keyword, i) =>
        JSON.stringify({
          id: i + 1,
          topic: "Science",
          language: "en",
          prompt: `What is the latest ${keyword} measurement?`
        })
      )
      .join("\n")
  )
  return { fs, path, queryFile, outputDir: path.join(dir, "out") }
})

const readArticles = (fs: FileSystem.FileSystem, file: string) =>
  Effect.map(fs.readFileString(file), (text) =>
    text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => Schema.decodeUnknownSync(Schema.parseJson(BenchmarkRunner.Article))(line))
      .sort((a, b) => a.id - b.id)
  )

describe("BenchmarkRunner with the pipeline", () => {
  it.live("researches each task through the pipeline into cited articles and table rows", () =>
    Effect.gen(function* () {
      const { fs, outputDir, path, queryFile } = yield* setup
      const summary = yield* BenchmarkRunner.run({
        queryFile,
        outputDir,
        concurrency: 1,
        research: BenchmarkRunner.pipelineResearch({ config: { maxSupervisionRounds: 2 } })
      })
      assert.deepStrictEqual(summary.ran, [1, 2])
      assert.deepStrictEqual(summary.failed, [])
      const articles = yield* readArticles(fs, path.join(outputDir, "articles.jsonl"))
      assert.deepStrictEqual(
        articles.map((a) => a.prompt),
        ["What is the latest ALPHA measurement?", "What is the latest BRAVO measurement?"]
      )
      assert.include(articles[1]?.article ?? "", "BRAVO was measured at 42 units in 2024 by its institute [1].")
      assert.include(articles[1]?.article ?? "", urlOf("BRAVO"))
      const row = summary.table.rows[1]
      assert.isAbove(row?.tokens ?? 0, 0)
      assert.isAtLeast(row?.citations?.inlineCitations ?? 0, 1)
      assert.strictEqual(row?.citations?.danglingCitations, 0)
      assert.strictEqual(row?.citations?.unretrievedSources, 0)
      const stored = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.load(row?.sessionId ?? ""))
      assert.strictEqual(stored.status, "completed")
    }).pipe(Effect.scoped, Effect.provide(world))
  )

  it.live("takes over the completed session of a task interrupted before its record was written", () =>
    Effect.gen(function* () {
      const { fs, outputDir, path, queryFile } = yield* setup
      const earlier = yield* Pipeline.research("What is the latest ALPHA measurement?", {
        sessionId: "bench-1-earlier",
        clarification: "proceed"
      })
      const callsBefore = (yield* ScriptedModel.calls).length
      yield* fs.makeDirectory(path.join(outputDir, "tasks"), { recursive: true })
      yield* fs.writeFileString(path.join(outputDir, "tasks", "1.session"), "bench-1-earlier")
      const summary = yield* BenchmarkRunner.run({
        queryFile,
        outputDir,
        filter: { ids: [1] },
        research: BenchmarkRunner.pipelineResearch()
      })
      assert.strictEqual((yield* ScriptedModel.calls).length, callsBefore)
      assert.strictEqual(summary.table.rows[0]?.sessionId, "bench-1-earlier")
      const articles = yield* readArticles(fs, path.join(outputDir, "articles.jsonl"))
      assert.strictEqual(articles[0]?.article, earlier.report?.markdown)
    }).pipe(Effect.scoped, Effect.provide(world))
  )
})
