/**
 * The citation check while the report is written: a line's sentences are checked as soon as the line is complete,
 * while the report is still being written; the verification phase takes those checks (their citations renumbered as
 * the finished report's) and checks only the rest, so that the checked report is the one a check after the report
 * gives; a run checks its report this way; under a budget nothing is checked early.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Option } from "effect"
import * as Budget from "../src/Budget.js"
import * as Citations from "../src/Citations.js"
import * as LanguageModel from "../src/LanguageModel.js"
import * as Pipeline from "../src/Pipeline.js"
import * as StreamingVerification from "../src/phases/StreamingVerification.js"
import * as Verification from "../src/phases/Verification.js"
import { Report } from "../src/Research.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import { Source } from "../src/Source.js"
import * as Task from "../src/Task.js"
import { ScriptedModel } from "../src/testing/index.js"
import * as H from "./pipelineHarness.js"

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

const rates = source("s1", "https://a.example.org/rates", "Gold fell 28% in 2013 as real rates rose.")
const banks = source("s2", "https://b.example.org/banks", "Central banks bought 1,037 tonnes of gold in 2023.")
const oil = source("s3", "https://c.example.org/oil", "Oil output was flat in 2023.")

/** The sources as the report model was shown them: its `[n]` are these, not the finished report's numbers. */
const material = [banks, rates, oil]

const opening = "# Gold\n\nGold fell 28% in 2013 [2]. Central banks sold all their gold in 2023 [1].\n\n"
const list = "- Gold is a safe haven [2, 1]. Oil prices doubled [3].\n- Central banks bought gold in 2023 [1]."
const modelText = `${opening}${list}`

/** The report synthesis makes of the model's text: its citations renumbered in order of use. */
const finished = () => {
  const finalized = Citations.finalize(modelText, material, "Sources")
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

const userText = (request: LanguageModel.GenerateRequest) => {
  const first = request.messages[0]
  return first !== undefined && first._tag === "user" ? first.content : ""
}

/** A checker that judges by the source's address, whatever number it is shown under. */
const checker = (request: LanguageModel.GenerateRequest): ScriptedModel.Reply => {
  const text = userText(request)
  const urls = new Map(
    [...text.matchAll(/kind="cited source" label="(\d+)" url="([^"]*)"/g)].map((m) => [Number(m[1]), m[2] ?? ""])
  )
  const labelOf = (sentence: string, url: string) =>
    sentence.includes("sold all") || sentence.includes("Oil prices")
      ? "contradicted"
      : sentence.includes("safe haven")
        ? url.includes("rates")
          ? "partially_supported"
          : "unsupported"
        : "supported"
  return ScriptedModel.json({
    verdicts: [...text.matchAll(/<sentence id="(\d+)" cites="([^"]*)">([^<]*)<\/sentence>/g)].map((m) => {
      const citations = (m[2] ?? "").split(",").map((n) => {
        const number = Number(n.trim())
        return { source: number, label: labelOf(m[3] ?? "", urls.get(number) ?? "") }
      })
      return { claim: Number(m[1]), label: citations[0]?.label ?? "unsupported", explanation: "as scripted", citations }
    })
  })
}

/** Sentences of each check call, in the order the calls were made. */
const checkedSentences = Effect.map(ScriptedModel.calls, (calls) =>
  calls
    .filter((call) => isClaimCheck(call.request))
    .map((call) => [...userText(call.request).matchAll(/<sentence[^>]*>([^<]*)<\/sentence>/g)].map((m) => m[1]))
)

/** Writes the model's text in two parts, the second only once `proceed` is done. */
const writing = (proceed: Deferred.Deferred<void>) =>
  Effect.gen(function* () {
    // As a provider does: it streams only when a caller reads the text.
    const progress = yield* Effect.serviceOption(LanguageModel.TextProgress)
    const sink = Option.isSome(progress) ? yield* progress.value.start : () => Effect.void
    yield* sink(opening)
    yield* Deferred.await(proceed)
    yield* sink(modelText)
    return "written"
  })

describe("StreamingVerification", () => {
  it.scoped("checks a complete paragraph while the report is still being written", () =>
    Effect.gen(function* () {
      const checkStarted = yield* Deferred.make<void>()
      const router = ScriptedModel.layerRouter({
        default: ["unexpected call"],
        roles: { summarization: (request) => Effect.as(Deferred.succeed(checkStarted, undefined), checker(request)) }
      })
      // The writing waits for a check to begin: it ends only if the first paragraph is checked before it does.
      const { early, value } = yield* StreamingVerification.whileWriting(
        material,
        Verification,
        writing(checkStarted)
      ).pipe(Effect.provide(router))
      assert.strictEqual(value, "written")
      const outcome = yield* Verification.run(task, { report: finished(), sources: material, early }).pipe(
        Effect.provide(router)
      )
      assert.strictEqual(outcome.verification.checked, 5)
    })
  )

  it.scoped(
    "gives the report a check after it would give, checking only what was not checked while it was written",
    () =>
      Effect.gen(function* () {
        const proceed = yield* Deferred.make<void>()
        yield* Deferred.succeed(proceed, undefined)
        const router = ScriptedModel.layerRouter({ default: ["unexpected call"], roles: { summarization: checker } })
        const streamed = yield* Effect.gen(function* () {
          const { early } = yield* StreamingVerification.whileWriting(material, Verification, writing(proceed))
          const outcome = yield* Verification.run(task, { report: finished(), sources: material, early })
          return { outcome, sentences: yield* checkedSentences }
        }).pipe(Effect.provide(router))
        const after = yield* Effect.gen(function* () {
          const outcome = yield* Verification.run(task, { report: finished(), sources: material })
          return { outcome, sentences: yield* checkedSentences }
        }).pipe(Effect.provide(router))

        assert.strictEqual(streamed.outcome.report.markdown, after.outcome.report.markdown)
        assert.deepStrictEqual(streamed.outcome.verification, after.outcome.verification)
        assert.include(
          streamed.outcome.report.markdown,
          "Central banks sold all their gold in 2023. *(not supported by the cited sources)*"
        )
        assert.include(streamed.outcome.report.markdown, "- Gold is a safe haven [1].")
        // The opening paragraph and the list's first line were checked as the model wrote them (under the numbers of
        // its material); the last line, not yet ended when the writing did, after it; no sentence twice.
        assert.deepStrictEqual(streamed.sentences, [
          ["Gold fell 28% in 2013 [2].", "Central banks sold all their gold in 2023 [1]."],
          ["Gold is a safe haven [2, 1].", "Oil prices doubled [3]."],
          ["Central banks bought gold in 2023 [2]."]
        ])
        assert.strictEqual(after.sentences.length, 1)
      })
  )

  it.effect("in a run, checks the report's first line while the report model is still writing", () => {
    const first = "# Measurements\n\nThe first topic measured 42 units [1].\n"
    const scripts = (checkBegun: Deferred.Deferred<void>) =>
      H.scripts({
        // The report model writes its first line, then waits for its check to begin before it ends the report.
        report: () =>
          Effect.gen(function* () {
            const progress = yield* Effect.serviceOption(LanguageModel.TextProgress)
            if (Option.isNone(progress)) return "# Measurements\n\nNot streamed."
            const sink = yield* progress.value.start
            yield* sink(first)
            yield* Deferred.await(checkBegun)
            return `${first}The second topic measured 17 units [2].`
          }),
        summarization: (request) =>
          isClaimCheck(request)
            ? Effect.as(Deferred.succeed(checkBegun, undefined), checker(request))
            : ScriptedModel.json({ summary: "summary", excerpts: [] })
      })
    return Effect.gen(function* () {
      const checkBegun = yield* Deferred.make<void>()
      const session = yield* Pipeline.research("What are the latest measurements?", { sessionId: "streamed" }).pipe(
        Effect.provide(H.world({ scripts: scripts(checkBegun) }))
      )
      assert.strictEqual(session.status, "completed")
      assert.strictEqual(session.verification?.sentences, 2)
      assert.strictEqual(session.verification?.checked, 2)
      assert.include(session.report?.markdown ?? "", "*Citation check: 2 of 2 cited sentences were checked")
    })
  })

  it.scoped("checks nothing early under a budget: the check draws on what the report leaves", () =>
    Effect.gen(function* () {
      const proceed = yield* Deferred.make<void>()
      yield* Deferred.succeed(proceed, undefined)
      const budget = yield* Budget.make(new ResearchConfig.Budget({ maxTokens: 1_000_000 }), {
        tokens: 0,
        costUsd: 0
      })
      const router = ScriptedModel.layerRouter({ default: ["unexpected call"], roles: { summarization: checker } })
      const sentences = yield* Effect.gen(function* () {
        yield* StreamingVerification.whileWriting(material, Verification, writing(proceed))
        return yield* checkedSentences
      }).pipe(Effect.provideService(Budget.Budget, budget), Effect.provide(router))
      assert.deepStrictEqual(sentences, [])
    })
  )
})
