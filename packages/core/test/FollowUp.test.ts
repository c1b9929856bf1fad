// After the report: follow-up questions answered from the session's stored sources, and continuations that go deeper
// without fetching again what the session read.
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import * as ContentExtractor from "../src/ContentExtractor.js"
import * as FollowUp from "../src/FollowUp.js"
import * as Passages from "../src/internal/text/passages.js"
import * as Checkpoint from "../src/phases/Checkpoint.js"
import * as Continuation from "../src/phases/Continuation.js"
import * as Pipeline from "../src/Pipeline.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import { SessionStore } from "../src/SessionStore.js"
import { ScriptedRun } from "../src/testing/index.js"
import * as UsageLedger from "../src/UsageLedger.js"

const pages = [
  {
    url: "https://www.bis.org/basel3",
    title: "Basel III: international regulatory framework for banks",
    content:
      "Basel III raised the minimum common equity requirement from 2% to 4.5% of risk-weighted assets.\n\n" +
      "A capital conservation buffer of 2.5% was added on top of the minimum."
  },
  {
    url: "https://www.bis.org/leverage",
    title: "Basel III leverage ratio framework",
    content: "Basel III introduced a leverage ratio of at least 3% of Tier 1 capital to total exposure."
  },
  {
    url: "https://www.bis.org/liquidity",
    title: "Liquidity coverage ratio",
    content: "The liquidity coverage ratio requires banks to hold high-quality liquid assets for 30 days of outflows."
  }
]

const question = "How did the 2008 crisis change bank capital rules?"

const base = {
  pages,
  rounds: [
    [
      {
        topic: "Basel III common equity requirement",
        extract: ["https://www.bis.org/basel3"],
        findings: "Common equity rose to 4.5% [1]."
      }
    ]
  ],
  report: "# Capital rules after 2008\n\n## Capital\n\nCommon equity rose to 4.5% [1]."
} satisfies ScriptedRun.Script

/** The URLs every extraction asked for, in order. */
const extractLog = Effect.gen(function* () {
  const asked = yield* Ref.make<ReadonlyArray<string>>([])
  const layer = Layer.effect(
    ContentExtractor.ContentExtractor,
    Effect.gen(function* () {
      const inner = yield* ContentExtractor.ContentExtractor
      return {
        name: inner.name,
        extract: (urls: ReadonlyArray<string>) =>
          Effect.zipRight(
            Ref.update(asked, (all) => [...all, ...urls]),
            inner.extract(urls)
          )
      }
    })
  )
  return { asked, layer }
})

describe("FollowUp.ask", () => {
  it.effect("answers from the stored sources with the session's numbers, checked, and keeps the answer", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research(question)
      assert.strictEqual(session.status, "completed")
      const { answer, session: after } = yield* FollowUp.ask(session.id, "What buffer was added on top of the minimum?")
      assert.isTrue(answer.covered)
      // The model cited [1] (the report's source) and [7] (no such source): only [1] stands.
      assert.include(answer.markdown, "was added [1].")
      assert.notInclude(answer.markdown, "[7]")
      assert.deepStrictEqual(
        answer.citations.map((c) => [c.number, c.url]),
        [[1, "https://www.bis.org/basel3"]]
      )
      // The check ran over its cited sentences, as a report's.
      assert.strictEqual(answer.verification?.checked, 1)
      const calls = yield* ScriptedRun.calls
      const followUp = calls.find((c) => c.request.responseFormat?.name === "follow_up_answer")
      // The passage shown is the stored text of the source, under its number in the session.
      assert.include(followUp?.request.messages[0]?.content ?? "", "capital conservation buffer")
      assert.include(followUp?.request.messages[0]?.content ?? "", 'label="1"')
      const stored = yield* Effect.flatMap(SessionStore, (store) => store.load(session.id))
      assert.deepStrictEqual(
        stored.answers.map((a) => a.question),
        ["What buffer was added on top of the minimum?"]
      )
      assert.strictEqual(after.answers.length, 1)
      // Its cost is under its own phase, and in the session's totals.
      const metrics = stored.metrics.find((m) => m.phase === "answer")
      assert.isAbove(metrics?.calls ?? 0, 0)
      assert.isAbove(
        stored.usage.reduce((n, r) => n + r.calls, 0),
        session.usage.reduce((n, r) => n + r.calls, 0)
      )
    }).pipe(
      Effect.provide(
        ScriptedRun.layer({
          ...base,
          answer: {
            covered: true,
            answer: "A capital conservation buffer of 2.5% was added [1, 7].",
            direction: ""
          }
        })
      )
    )
  )

  it.effect("says when the stored sources do not cover the question, and offers a direction, with no model call", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research(question)
      const before = (yield* ScriptedRun.calls).length
      const { answer } = yield* FollowUp.ask(session.id, "Zebra migration routes in Kenya?")
      assert.isFalse(answer.covered)
      assert.include(answer.markdown, "do not cover this question")
      assert.strictEqual(answer.suggestedDirection, "Zebra migration routes in Kenya?")
      assert.strictEqual((yield* ScriptedRun.calls).length, before)
    }).pipe(Effect.provide(ScriptedRun.layer(base)))
  )

  it.effect(
    "draws on the session's budget: refused in numbers when it is spent, answered once a larger one is given",
    () =>
      Effect.gen(function* () {
        const session = yield* Pipeline.research(question)
        const store = yield* SessionStore
        const spent = UsageLedger.totals(session.usage).tokens
        assert.isAbove(spent, 0)
        // The session's budget as a run that spent nearly all of it would leave it.
        const budget = new ResearchConfig.Budget({ ...session.config.budget, maxTokens: spent + 10 })
        yield* store.save(
          Checkpoint.patch(session, { config: new ResearchConfig.ResearchConfig({ ...session.config, budget }) })
        )
        const asked = "What buffer was added on top of the minimum?"
        const refused = yield* Effect.flip(FollowUp.ask(session.id, asked))
        assert.strictEqual(refused._tag, "ResearchBudgetExhausted")
        assert.include(refused.message, `The budget of ${spent + 10} tokens is exhausted`)
        assert.deepStrictEqual((yield* store.load(session.id)).answers, [])
        const { answer, session: after } = yield* FollowUp.ask(session.id, asked, {
          budget: { maxTokens: spent + 100_000 }
        })
        assert.isTrue(answer.covered)
        assert.strictEqual(after.config.budget.maxTokens, spent + 100_000)
        // What the answer spent is counted with what the session spent, under the answer's phase.
        const answerTokens = UsageLedger.totals(answer.usage).tokens
        assert.isAbove(answerTokens, 0)
        assert.strictEqual(UsageLedger.totals(after.usage).tokens, spent + answerTokens)
        const phase = after.metrics.find((m) => m.phase === "answer")
        assert.strictEqual(UsageLedger.totals(phase?.roles ?? []).tokens, answerTokens)
      }).pipe(
        Effect.provide(
          ScriptedRun.layer({
            ...base,
            answer: { covered: true, answer: "A capital conservation buffer of 2.5% was added [1].", direction: "" }
          })
        )
      )
  )

  it.effect("refuses a session with no finished report, and an empty question", () =>
    Effect.gen(function* () {
      const queued = yield* Pipeline.enqueue(question)
      const error = yield* Effect.flip(FollowUp.ask(queued.id, "What changed?"))
      assert.strictEqual(error._tag, "ResearchInvalidInput")
      const empty = yield* Effect.flip(FollowUp.ask(queued.id, "  "))
      assert.strictEqual(empty._tag, "ResearchInvalidInput")
    }).pipe(Effect.provide(ScriptedRun.layer(base)))
  )
})

describe("FollowUp.extend", () => {
  it.effect("researches a new direction, writes a new report version and fetches no page the session read", () =>
    Effect.gen(function* () {
      const { asked, layer } = yield* extractLog
      yield* Effect.gen(function* () {
        const session = yield* Pipeline.research(question)
        assert.deepStrictEqual(yield* Ref.get(asked), ["https://www.bis.org/basel3"])
        assert.notInclude(
          session.sources.map((s) => s.url),
          "https://www.bis.org/liquidity"
        )
        const extended = yield* FollowUp.extend(session.id, "the liquidity rules")
        assert.strictEqual(extended.status, "completed")
        // Only the page the session had not read was fetched.
        assert.deepStrictEqual(yield* Ref.get(asked), ["https://www.bis.org/basel3", "https://www.bis.org/liquidity"])
        assert.strictEqual(extended.rounds.length, 2)
        assert.strictEqual(extended.reportVersions.length, 1)
        assert.strictEqual(extended.reportVersions[0]?.report.markdown, session.report?.markdown)
        assert.include(extended.report?.markdown ?? "", "## Liquidity")
        const changes = Continuation.changes(extended.reportVersions[0]!.report, extended.report!)
        assert.deepStrictEqual(changes.sectionsAdded, ["Liquidity"])
        assert.deepStrictEqual(
          changes.sourcesAdded.map((s) => s.url),
          ["https://www.bis.org/liquidity"]
        )
        // The supervisor was told the direction after the earlier rounds.
        const supervisor = (yield* ScriptedRun.calls).filter((c) => c.role === "supervisor").at(-1)
        assert.include(JSON.stringify(supervisor?.request.messages), "the liquidity rules")
      }).pipe(Effect.provide(layer))
    }).pipe(
      Effect.provide(
        ScriptedRun.layer({
          ...base,
          continuationRounds: [
            [
              {
                topic: "Basel III liquidity coverage ratio: the rules on high-quality liquid assets",
                extract: ["https://www.bis.org/basel3", "https://www.bis.org/liquidity"],
                findings: "Banks hold liquid assets for 30 days [2]."
              }
            ]
          ],
          continuationReport:
            "# Capital rules after 2008\n\n## Capital\n\nCommon equity rose to 4.5% [1].\n\n## Liquidity\n\n" +
            "Banks hold liquid assets for 30 days of outflows [3]."
        })
      )
    )
  )

  it.effect("refuses an empty direction and a session that is not finished", () =>
    Effect.gen(function* () {
      const queued = yield* Pipeline.enqueue(question)
      assert.strictEqual((yield* Effect.flip(FollowUp.extend(queued.id, "more")))._tag, "ResearchInvalidInput")
      assert.strictEqual((yield* Effect.flip(FollowUp.extend(queued.id, " ")))._tag, "ResearchInvalidInput")
    }).pipe(Effect.provide(ScriptedRun.layer(base)))
  )
})

describe("passages and numbering", () => {
  it("cuts a text into passages of at most 700 characters and ranks them by the question's terms", () => {
    const long = Array.from({ length: 40 }, (_, i) => `Sentence ${i} is about nothing much.`).join(" ")
    const pieces = Passages.split(`${long}\n\nTidal range depends on the moon and the sun.`)
    assert.isTrue(pieces.every((piece) => piece.length <= Passages.passageChars))
    assert.isAbove(pieces.length, 1)
    const ranked = Passages.rank(
      Passages.passagesOf(["a", "b"], (id) => (id === "a" ? long : "Tidal range depends on the moon and the sun.")),
      "What does the tidal range depend on?"
    )
    assert.strictEqual(ranked[0]?.passage.source, "b")
    // A passage that shares no term with the question is left out.
    assert.deepStrictEqual(
      ranked.map((r) => r.passage.source),
      ["b"]
    )
  })

  it.effect("keeps the report's numbers and numbers the sources it did not cite after them", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research(question)
      const numbered = FollowUp.numbering(session)
      const cited = session.report?.citations ?? []
      assert.deepStrictEqual(
        numbered.slice(0, cited.length).map((n) => [n.number, n.source.id]),
        cited.map((c) => [c.number, c.sourceId])
      )
      assert.deepStrictEqual(
        numbered.map((n) => n.number),
        Array.from({ length: session.sources.length }, (_, i) => i + 1)
      )
    }).pipe(Effect.provide(ScriptedRun.layer(base)))
  )
})
