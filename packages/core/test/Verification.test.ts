/**
 * The verification phase: a planted citation whose source does not back its sentence is removed (and the sentence
 * marked when it has no other), a backed one is kept; the phase can be turned off; and a budget that cannot pay for
 * the check leaves the report as written, saying so.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Budget from "../src/Budget.js"
import * as Citations from "../src/Citations.js"
import type * as LanguageModel from "../src/LanguageModel.js"
import * as Pipeline from "../src/Pipeline.js"
import * as Verification from "../src/phases/Verification.js"
import { Report } from "../src/Research.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import { Source } from "../src/Source.js"
import * as Task from "../src/Task.js"
import { ScriptedModel } from "../src/testing/index.js"
import * as H from "./pipelineHarness.js"

/** The task the checked reports answer. */
const task = Task.make({ query: "gold", config: ResearchConfig.defaults })

const source = (id: string, url: string, content: string) =>
  new Source({
    id,
    url,
    title: `Title ${id}`,
    content,
    provider: "static",
    quality: "high",
    retrievedAt: 0,
    directiveId: "d1",
    rawLength: content.length
  })

const sources = [
  source("s1", "https://a.example.org/rates", "Gold fell 28% in 2013 as real rates rose."),
  source("s2", "https://b.example.org/banks", "Central banks bought 1,037 tonnes of gold in 2023."),
  source("s3", "https://c.example.org/oil", "Oil output was flat in 2023.")
]

const written = [
  "# Gold",
  "",
  "Gold fell 28% in 2013 [1]. Central banks sold all their gold in 2023 [2].",
  "",
  "- Gold is a safe haven [1, 2]. Oil prices doubled [3].",
  "- Central banks bought gold in 2023 [2]."
].join("\n")

const reportOf = (markdown: string) => {
  const finalized = Citations.finalize(markdown, sources, "Sources")
  return new Report({
    title: "Gold",
    markdown: finalized.markdown,
    citations: finalized.citations,
    language: "English",
    droppedCitations: 0
  })
}

const isClaimCheck = (request: LanguageModel.GenerateRequest) =>
  (request.system ?? "").includes("sentences of a research report are backed")

/** A checker that knows which planted citations are unsupported. */
const checker = (request: LanguageModel.GenerateRequest): ScriptedModel.Reply => {
  const text = typeof request.messages[0]?.content === "string" ? request.messages[0].content : ""
  const sentences = [...text.matchAll(/<sentence id="(\d+)" cites="([^"]*)">([^<]*)<\/sentence>/g)]
  const labelOf = (sentence: string, n: number) =>
    sentence.includes("sold all") || sentence.includes("Oil prices")
      ? "contradicted"
      : sentence.includes("safe haven")
        ? n === 1
          ? "partially_supported"
          : "unsupported"
        : "supported"
  return ScriptedModel.json({
    verdicts: sentences.map((m) => {
      const cites = (m[2] ?? "").split(",").map((n) => Number(n.trim()))
      const citations = cites.map((n) => ({ source: n, label: labelOf(m[3] ?? "", n) }))
      return { claim: Number(m[1]), label: citations[0]?.label ?? "unsupported", explanation: "as scripted", citations }
    })
  })
}

const router = ScriptedModel.layerRouter({ default: ["unexpected call"], roles: { summarization: checker } })

describe("Verification", () => {
  it.effect("removes a citation its source does not back, keeps a backed one, and marks a sentence left bare", () =>
    Effect.gen(function* () {
      const outcome = yield* Verification.run(task, { report: reportOf(written), sources })
      const markdown = outcome.report.markdown
      assert.include(markdown, "Gold fell 28% in 2013 [1].")
      assert.include(markdown, "Central banks sold all their gold in 2023. *(not supported by the cited sources)*")
      assert.include(markdown, "- Gold is a safe haven [1].")
      assert.include(markdown, "Oil prices doubled. *(not supported by the cited sources)*")
      assert.include(markdown, "- Central banks bought gold in 2023 [2].")
      // The oil source is no longer cited: the list and the citations drop it.
      assert.deepStrictEqual(
        outcome.report.citations.map((c) => c.sourceId),
        ["s1", "s2"]
      )
      assert.notInclude(markdown, "c.example.org")
      assert.isTrue(
        markdown
          .trimEnd()
          .endsWith("*Citation check: 5 of 5 cited sentences were checked against their sources; 3 were changed.*")
      )
      assert.strictEqual(outcome.verification.removedCitations, 3)
      assert.strictEqual(outcome.verification.marked, 2)
      assert.deepStrictEqual(
        outcome.verification.verdicts.map((v) => v.removed),
        [[], [2], [2], [3], []]
      )
      const calls = yield* ScriptedModel.calls
      assert.strictEqual(calls.length, 1)
      assert.strictEqual(calls[0]?.role, "summarization")
      // The check reads the stored text of the cited sources.
      assert.include(H.requestText(calls[0]?.request ?? { messages: [] }), "1,037 tonnes")
    }).pipe(Effect.provide(router))
  )

  it.effect("leaves the report as written when the budget cannot pay for the check, and says so", () =>
    Effect.gen(function* () {
      const budget = yield* Budget.make(new ResearchConfig.Budget({ maxTokens: 10_000, synthesisReserve: 0.15 }), {
        tokens: 9_900,
        costUsd: 0
      })
      const report = reportOf(written)
      const outcome = yield* Verification.run(task, { report, sources }).pipe(
        Effect.provideService(Budget.Budget, budget)
      )
      assert.include(outcome.report.markdown, "Central banks sold all their gold in 2023 [2].")
      assert.include(outcome.report.markdown, "Oil prices doubled [3].")
      assert.include(
        outcome.report.markdown,
        "0 of 5 cited sentences were checked against their sources; 0 were changed. The budget ran out before the " +
          "others were checked."
      )
      assert.strictEqual(outcome.verification.incomplete, "budget")
      assert.isTrue(outcome.verification.verdicts.every((v) => v.status === "unchecked"))
      assert.strictEqual((yield* ScriptedModel.calls).length, 0)
      assert.isAtMost((yield* budget.status).spent.tokens, 10_000)
    }).pipe(Effect.provide(router))
  )

  const scripts = H.scripts({
    summarization: (request) =>
      isClaimCheck(request) ? checker(request) : ScriptedModel.json({ summary: "summary", excerpts: [] })
  })

  it.effect("runs in the pipeline by default, its verdicts kept with the session", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What are the latest measurements?", { sessionId: "verified" })
      assert.include(session.phasesCompleted, "verification")
      assert.strictEqual(session.verification?.sentences, 2)
      assert.include(session.report?.markdown ?? "", "*Citation check: 2 of 2 cited sentences were checked")
      assert.isDefined(session.metrics.find((m) => m.phase === "verification" && m.calls === 1))
    }).pipe(Effect.provide(H.world({ scripts })))
  )

  it.effect("verify: false turns it off: no check, no verdicts, and a closing line that says so", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("What are the latest measurements?", {
        sessionId: "unverified",
        config: { verify: false }
      })
      assert.strictEqual(session.status, "completed")
      assert.notInclude(session.phasesCompleted, "verification")
      assert.isUndefined(session.verification)
      assert.match(
        session.report?.markdown ?? "",
        /\*Citation check: off for this report; the citations were not checked against their sources\.\*\n$/
      )
      assert.isFalse((yield* ScriptedModel.calls).some((c) => isClaimCheck(c.request)))
    }).pipe(Effect.provide(H.world({ scripts })))
  )
})
