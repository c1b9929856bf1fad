import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { ProviderUnavailable } from "../src/Errors.js"
import * as Pipeline from "../src/Pipeline.js"
import { Grounding } from "../src/Research.js"
import * as Session from "../src/Session.js"
import { SessionStore } from "../src/SessionStore.js"
import * as H from "./pipelineHarness.js"

/** A model that answers every turn in prose: it never calls a tool. */
const prose = ["I believe the answer is 42 units, as is well known."]

const proseWorld = H.world({ scripts: H.scripts({ supervisor: prose, researcher: prose }) })

describe("Grounding", () => {
  it.effect(
    "a run that never called a tool completes, its report opening with the notice and its grounding saying why",
    () =>
      Effect.gen(function* () {
        const session = yield* Pipeline.research("What is ALPHA measured at?", { sessionId: "prose" })
        assert.strictEqual(session.status, "completed")
        const report = session.report
        assert.deepStrictEqual(report?.grounding, new Grounding({ sources: 0, reason: "no_tool_call" }))
        const markdown = report?.markdown ?? ""
        // The title, then the notice: the first paragraph a reader meets.
        const paragraphs = markdown.split("\n\n")
        assert.match(paragraphs[0] ?? "", /^# /)
        assert.strictEqual(
          paragraphs[1],
          "> **No source was found or read for this report.** The research model never called a search tool. What " +
            "follows rests on the model's own knowledge, not on research: check it before relying on it."
        )
        // The listing line and the events carry it as data.
        const listed = (yield* Effect.flatMap(SessionStore, (store) => store.list)).find((s) => s.id === "prose")
        assert.deepStrictEqual(listed?.grounding, new Grounding({ sources: 0, reason: "no_tool_call" }))
        const events = yield* Effect.flatMap(SessionStore, (store) => store.events("prose"))
        const written = events.find((e) => e._tag === "ReportWritten")
        assert.isTrue(
          written?._tag === "ReportWritten" && written.sources === 0 && written.ungrounded === "no_tool_call"
        )
      }).pipe(Effect.provide(proseWorld))
  )

  it.effect("the notice is in the report's language", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("热泵和燃气锅炉相比，哪个更省钱？")
      assert.include(session.report?.markdown ?? "", "本报告没有找到或阅读任何来源。")
      assert.include(session.report?.markdown ?? "", "研究模型从未调用搜索工具。")
    }).pipe(Effect.provide(proseWorld))
  )

  it.effect("with requireSources the run fails with Ungrounded, its report kept; resumed, it fails again", () =>
    Effect.gen(function* () {
      const failed = yield* Effect.either(
        Pipeline.research("What is ALPHA measured at?", { sessionId: "required", config: { requireSources: true } })
      )
      assert.isTrue(Either.isLeft(failed) && failed.left._tag === "Ungrounded")
      const stored = yield* Effect.flatMap(SessionStore, (store) => store.load("required"))
      assert.strictEqual(stored.status, "failed")
      assert.strictEqual(stored.error?._tag, "Ungrounded")
      assert.include(stored.report?.markdown ?? "", "No source was found or read")
      const again = yield* Effect.either(Pipeline.resume("required"))
      assert.isTrue(Either.isLeft(again) && again.left._tag === "Ungrounded")
    }).pipe(Effect.provide(proseWorld))
  )

  it.effect("every search failing is said as such", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("Measure the topics")
      assert.deepStrictEqual(session.report?.grounding, new Grounding({ sources: 0, reason: "searches_failed" }))
      assert.include(session.report?.markdown ?? "", "Every search and page extraction failed.")
    }).pipe(
      Effect.provide(
        H.world({
          web: { failSearch: () => new ProviderUnavailable({ provider: "static", detail: "down" }) }
        })
      )
    )
  )

  it.effect("searches that find nothing are said as such", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("Measure the topics")
      assert.deepStrictEqual(session.report?.grounding, new Grounding({ sources: 0, reason: "nothing_found" }))
    }).pipe(Effect.provide(H.world({ web: { route: () => [] } })))
  )

  it.effect("a report with sources carries their number and no notice", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research("Measure the topics")
      assert.isTrue(session.report?.grounding?.grounded)
      assert.isAbove(session.report?.grounding?.sources ?? 0, 0)
      assert.notInclude(session.report?.markdown ?? "", "No source was found")
      assert.deepStrictEqual(Session.summarize(session).grounding, session.report?.grounding)
    }).pipe(Effect.provide(H.world({})))
  )
})
