import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ContextWindowExceeded } from "../src/Errors.js"
import * as Language from "../src/internal/text/language.js"
import * as Synthesis from "../src/phases/Synthesis.js"
import * as SynthesisPrompt from "../src/prompts/synthesis.js"
import { Directive, IssuedDirective, SupervisionRound, TopicResult } from "../src/Research.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as Session from "../src/Session.js"
import { Source } from "../src/Source.js"
import * as Task from "../src/Task.js"
import { ScriptedModel } from "../src/testing/index.js"

const source = (directiveId: string, n: number, url: string) =>
  new Source({
    id: `${directiveId}-s${n}`,
    url,
    title: `Title ${directiveId} ${n}`,
    content: "content",
    provider: "static",
    quality: "high",
    retrievedAt: 0,
    directiveId,
    rawLength: 1_000
  })

const result = (directiveId: string, fields: Partial<ConstructorParameters<typeof TopicResult>[0]>) =>
  new TopicResult({
    directiveId,
    status: "completed",
    findings: "",
    supervisorSummary: "",
    sourceIds: [],
    stopReason: "complete",
    toolCalls: 1,
    turns: 1,
    compressed: true,
    ...fields
  })

const issued = (id: string, topic: string) =>
  new IssuedDirective({
    id,
    round: 1,
    directive: new Directive({ topic, perspective: "p", evidenceNeeded: "e", priority: 1 })
  })

/** Two completed topics sharing one URL, and a failed one whose error must not reach the writer. */
const session = (query: string) =>
  new Session.Session({
    version: Session.currentVersion,
    id: "synthesis-test",
    query,
    createdAt: 0,
    updatedAt: 0,
    config: ResearchConfig.defaults,
    status: "running",
    rounds: [
      new SupervisionRound({
        round: 1,
        directives: [issued("r1-d1", "Topic one"), issued("r1-d2", "Topic two"), issued("r1-d3", "Topic three")],
        results: [
          result("r1-d1", {
            findings: "One says A [1] and B [2].\n\n### Sources\n[1] Title r1-d1 1: https://a.example/1",
            sourceIds: ["r1-d1-s1", "r1-d1-s2"]
          }),
          result("r1-d2", {
            findings: "Two says C [1] and D [2], and E [7].",
            sourceIds: ["r1-d2-s1", "r1-d2-s2"]
          }),
          result("r1-d3", {
            status: "failed",
            findings: "Error executing tool: SECRET-FAILURE-TEXT",
            stopReason: "failed",
            error: "ProviderUnavailable: SECRET-FAILURE-TEXT"
          })
        ],
        completed: true
      })
    ],
    sources: [
      source("r1-d1", 1, "https://a.example/1"),
      source("r1-d1", 2, "https://b.example/2"),
      source("r1-d2", 1, "https://www.b.example/2/"),
      source("r1-d2", 2, "https://c.example/3"),
      source("r1-d3", 1, "https://failed.example/x")
    ],
    metrics: [],
    usage: []
  })

const reportCalls = Effect.map(ScriptedModel.calls, (calls) => calls.filter((c) => c.role === "report"))

const promptText = (call: ScriptedModel.RecordedCall | undefined) =>
  (call?.request.system ?? "") + "\n" + (call?.request.messages.map((m) => m.content).join("\n") ?? "")

/** Synthesis of a session's own task. */
const write = (stored: Session.Session) => Synthesis.run(Task.fromSession(stored), stored)

const run = (query: string, report: ScriptedModel.Script) =>
  write(session(query)).pipe(Effect.provide(ScriptedModel.layerRouter({ default: [], roles: { report } })))

describe("Synthesis", () => {
  it("numbers sources once per URL and rewrites each topic's citations to those numbers", () => {
    const found = Synthesis.material(session("q"))
    assert.deepStrictEqual(
      found.sources.map((s) => s.url),
      ["https://a.example/1", "https://b.example/2", "https://c.example/3"]
    )
    assert.strictEqual(found.topics[0]?.findings, "One says A [1] and B [2].")
    // Topic two's first source is the same page as topic one's second; its [7] points at nothing and goes.
    assert.strictEqual(found.topics[1]?.findings, "Two says C [2] and D [3], and E.")
    assert.strictEqual(found.topics.length, 2)
  })

  it.effect("findings of failed units and error text never reach the report prompt", () =>
    Effect.gen(function* () {
      yield* write(session("q"))
      const text = promptText((yield* reportCalls)[0])
      assert.notInclude(text, "SECRET-FAILURE-TEXT")
      assert.notInclude(text, "Topic three")
      assert.notInclude(text, "failed.example")
      assert.include(text, "Two says C [2]")
    }).pipe(Effect.provide(ScriptedModel.layerRouter({ default: [], roles: { report: ["# R\n\nBody [1]."] } })))
  )

  it.effect("renumbers the report's citations, removes dangling ones and appends the source list", () =>
    Effect.gen(function* () {
      const report = yield* run("What is known about A?", [
        "# About A\n\nC holds [3]. A holds [1, 3]. Invented [12].\n\n## References\n1. made up"
      ])
      assert.strictEqual(report.title, "About A")
      assert.include(report.markdown, "C holds [1]. A holds [1, 2]. Invented.")
      assert.include(
        report.markdown,
        "## Sources\n\n1. [Title r1-d2 2](https://c.example/3)\n2. [Title r1-d1 1](https://a.example/1)"
      )
      assert.notInclude(report.markdown, "made up")
      assert.strictEqual(report.droppedCitations, 1)
      assert.deepStrictEqual(
        report.citations.map((c) => c.sourceId),
        ["r1-d2-s2", "r1-d1-s1"]
      )
    })
  )

  it.effect("a Chinese question gets the report-language instruction for Chinese", () =>
    Effect.gen(function* () {
      const report = yield* write(session("量子计算目前的主要技术路线有哪些？"))
      const call = (yield* reportCalls)[0]
      assert.include(call?.request.system ?? "", Language.reportInstruction(Language.detect("量子计算")))
      assert.include(call?.request.system ?? "", "中文")
      assert.strictEqual(report.language, "Chinese")
      assert.include(report.markdown, "## 参考来源")
    }).pipe(Effect.provide(ScriptedModel.layerRouter({ default: [], roles: { report: ["# 报告\n\n内容 [1]。"] } })))
  )

  it.effect("the report structure follows the kind of question", () =>
    Effect.gen(function* () {
      yield* write(session("PostgreSQL vs MySQL for analytics"))
      const system = (yield* reportCalls)[0]?.request.system ?? ""
      assert.include(system, "This is a comparison.")
      assert.include(system, "Never write meta commentary")
    }).pipe(Effect.provide(ScriptedModel.layerRouter({ default: [], roles: { report: ["# R\n\nx [1]."] } })))
  )

  it("detects the language of a question from its script and common words", () => {
    const code = (text: string) => Language.detect(text).code
    assert.strictEqual(code("量子计算目前的主要技术路线有哪些？"), "zh")
    assert.strictEqual(code("Rust 和 Go 的区别是什么？"), "zh")
    assert.strictEqual(code("量子コンピュータの現状はどうですか"), "ja")
    assert.strictEqual(code("양자 컴퓨터의 현황은?"), "ko")
    assert.strictEqual(code("Какие есть методы квантовых вычислений?"), "ru")
    assert.strictEqual(code("¿Cuáles son las ventajas de la energía solar para los hogares?"), "es")
    assert.strictEqual(code("Wie ist der Stand der Technik bei Wärmepumpen und was kostet eine?"), "de")
    assert.strictEqual(code("What is the Qwen 通义千问 model?"), "en")
    // Too little to tell: the brief's language decides.
    assert.strictEqual(Language.forReport("Tesla Aktie?", "Deutsch").code, "de")
    assert.strictEqual(Language.forReport("量子计算", "English").code, "zh")
  })

  it("classifies questions by kind", () => {
    assert.strictEqual(SynthesisPrompt.classify("Rust vs Go for CLI tools"), "comparison")
    assert.strictEqual(SynthesisPrompt.classify("Rust 和 Go 的区别是什么？"), "comparison")
    assert.strictEqual(SynthesisPrompt.classify("How to set up WireGuard on Debian"), "howto")
    assert.strictEqual(SynthesisPrompt.classify("What are the best static site generators?"), "enumeration")
    assert.strictEqual(
      SynthesisPrompt.classify("A literature review of sleep and memory consolidation"),
      "literature_review"
    )
    assert.strictEqual(SynthesisPrompt.classify("Why is the sky blue?"), "explanation")
  })

  it.effect("with no usable findings the writer is told no sources exist and nothing is cited", () =>
    Effect.gen(function* () {
      const base = session("q")
      const onlyFailed = new Session.Session({
        ...base,
        rounds: base.rounds.map(
          (r) => new SupervisionRound({ ...r, results: r.results.filter((x) => x.status === "failed") })
        )
      })
      const report = yield* write(onlyFailed)
      const call = (yield* reportCalls)[0]
      assert.include(call?.request.system ?? "", "No sources could be retrieved")
      assert.notInclude(promptText(call), "SECRET-FAILURE-TEXT")
      assert.deepStrictEqual(report.citations, [])
      assert.strictEqual(report.droppedCitations, 1)
      assert.notInclude(report.markdown, "## Sources")
    }).pipe(Effect.provide(ScriptedModel.layerRouter({ default: [], roles: { report: ["# R\n\nA guess [1]."] } })))
  )

  it.effect("recovers from a context overflow by shrinking the findings", () =>
    Effect.gen(function* () {
      const report = yield* write(session("q"))
      const calls = yield* reportCalls
      assert.strictEqual(calls.length, 2)
      assert.isBelow(promptText(calls[1]).length, promptText(calls[0]).length)
      assert.strictEqual(report.markdown.startsWith("# Recovered"), true)
    }).pipe(
      Effect.provide(
        ScriptedModel.layerRouter({
          default: [],
          roles: {
            report: [new ContextWindowExceeded({ model: "scripted-model", limit: 200 }), "# Recovered\n\nBody [1]."]
          }
        })
      )
    )
  )
})
