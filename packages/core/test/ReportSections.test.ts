// A report asked for in a length, an outline and instructions: planned, written section by section, checked.
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Queue } from "effect"
import * as Budget from "../src/Budget.js"
import * as ClaimVerification from "../src/ClaimVerification.js"
import type * as LanguageModel from "../src/LanguageModel.js"
import * as Pipeline from "../src/Pipeline.js"
import * as ReportShape from "../src/ReportShape.js"
import * as ResearchConfig from "../src/ResearchConfig.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import { ScriptedModel, ScriptedRun } from "../src/testing/index.js"

const pages = [
  {
    url: "https://www.bis.org/basel3",
    title: "Basel III: international regulatory framework for banks",
    content: "Basel III raised the minimum common equity requirement from 2% to 4.5% of risk-weighted assets."
  },
  {
    url: "https://www.bis.org/leverage",
    title: "Basel III leverage ratio framework",
    content: "Basel III introduced a leverage ratio of at least 3% of Tier 1 capital to total exposure."
  }
]

const rounds = [
  [
    { topic: "Basel III common equity requirement", findings: "Common equity rose to 4.5% [1]." },
    { topic: "Basel III leverage ratio", findings: "A leverage ratio of 3% was added [1]." }
  ]
]

const question = "How did the 2008 crisis change bank capital rules?"

const systemOf = (request: LanguageModel.GenerateRequest) => request.system ?? ""
const callText = (call: ScriptedModel.RecordedCall | undefined) =>
  call === undefined ? "" : call.request.messages.map((m) => m.content).join("\n")
const userText = (request: LanguageModel.GenerateRequest) => request.messages.map((m) => m.content).join("\n")

/** The target a writing prompt states (`Length: about N words`). */
const targetOf = (request: LanguageModel.GenerateRequest): number =>
  Number(/Length: about (\d+) words/.exec(systemOf(request))?.[1] ?? "0")

/** Prose of `words` words, ten to a sentence, each sentence citing `n`. */
const prose = (words: number, n: number): string =>
  Array.from(
    { length: Math.max(1, Math.round(words / 10)) },
    (_, i) => `Capital ratio figure ${i + 1} was reported by regulators in 2010 [${n}].`
  ).join(" ")

/** The first source number a prompt lists. */
const firstSource = (request: LanguageModel.GenerateRequest): number =>
  Number(/^\[(\d+)\] /m.exec(userText(request))?.[1] ?? "1")

const isPlan = (request: LanguageModel.GenerateRequest) =>
  systemOf(request).startsWith("You plan a long research report")
const isSection = (request: LanguageModel.GenerateRequest) => systemOf(request).startsWith("You write one section")
const isFraming = (request: LanguageModel.GenerateRequest) =>
  /^You write the (introduction|conclusion)/.test(systemOf(request))

/** The report role of a long report: a plan of two sections, each part written to its target (`short`: first too short). */
const longReport =
  (options: { readonly shortFirst?: boolean } = {}): ScriptedModel.Script =>
  (request) => {
    if (isPlan(request)) {
      return ScriptedModel.json({
        title: "Capital rules after 2008",
        sections: [
          { title: "Common equity", findings: [1] },
          { title: "Leverage", findings: [2] }
        ],
        conclusionTitle: "What changed"
      })
    }
    const target = targetOf(request)
    const secondPass = request.messages.length > 1
    const words = options.shortFirst === true && isSection(request) && !secondPass ? Math.round(target / 4) : target
    return prose(words, firstSource(request))
  }

const reportCalls = Effect.map(ScriptedRun.calls, (calls) => calls.filter((c) => c.role === "report"))

const bodyOf = (markdown: string) => markdown.split("\n## Sources")[0] ?? markdown

describe("ReportShape", () => {
  it("reads named sizes and numbers, outlines inline or by lines, and counts words without citation marks", () => {
    assert.strictEqual(ReportShape.parseWords("long"), ReportShape.namedSizes.long)
    assert.strictEqual(ReportShape.parseWords(" 2500 "), 2_500)
    assert.strictEqual(ReportShape.parseWords("lots"), undefined)
    assert.deepStrictEqual(ReportShape.parseOutline("Background; Evidence ;; Outlook"), [
      "Background",
      "Evidence",
      "Outlook"
    ])
    assert.deepStrictEqual(ReportShape.parseOutline("# Background\n- Evidence\n2. Outlook\n"), [
      "Background",
      "Evidence",
      "Outlook"
    ])
    assert.strictEqual(
      ReportShape.countWords("# Title\n\nOne two three [1, 2]. Four [3].\n\n## Sources\n\n1. [A](https://a)"),
      5
    )
    assert.strictEqual(ReportShape.countWords("资本充足率提高 [1]"), 7)
  })

  it.effect("a report's reserve under a budget holds the words asked, beyond the default share", () =>
    Effect.gen(function* () {
      const budget = new ResearchConfig.Budget({ maxTokens: 100_000, synthesisReserve: 0.1 })
      const plain = yield* Budget.make(budget, { tokens: 0, costUsd: 0 })
      const planned = yield* Budget.make(
        budget,
        { tokens: 0, costUsd: 0 },
        { reportTokens: ReportShape.reserveTokensFor({ reportWords: 8_000 }) }
      )
      assert.strictEqual(yield* plain.room("research", "gpt-4.1"), 90_000)
      assert.strictEqual(yield* planned.room("research", "gpt-4.1"), 100_000 - 2 * 20_000 - 4_000)
    })
  )
})

describe("A long report", () => {
  it.scoped(
    "is planned, written section by section in parallel, framed, renumbered once and every sentence checked",
    () =>
      Effect.gen(function* () {
        const events = yield* (yield* ResearchEvents.ResearchEvents).subscribe
        const session = yield* Pipeline.research(question, { config: { reportWords: 3_000 } })
        const published = Chunk.toReadonlyArray(yield* Queue.takeAll(events))
        assert.strictEqual(session.status, "completed")
        const markdown = session.report?.markdown ?? ""
        // The plan's sections, in its order, between the introduction and the conclusion.
        const headings = [...markdown.matchAll(/^## (.+)$/gm)].map((m) => m[1])
        assert.deepStrictEqual(headings, ["Common equity", "Leverage", "What changed", "Sources"])
        assert.isTrue(markdown.startsWith("# Capital rules after 2008\n\nCapital ratio figure 1"))
        // Each section from its own findings: the first cites the first source, the second the second, numbered once.
        assert.deepStrictEqual(
          session.report?.citations.map((c) => [c.number, c.url]),
          [
            [1, "https://www.bis.org/basel3"],
            [2, "https://www.bis.org/leverage"]
          ]
        )
        const words = ReportShape.countWords(bodyOf(markdown))
        assert.isTrue(ReportShape.withinTolerance(words, 3_000), `${words} words`)
        // The plan first, then the sections, then the introduction and conclusion from them.
        const kinds = (yield* reportCalls).map((c) =>
          isPlan(c.request) ? "plan" : isSection(c.request) ? "section" : isFraming(c.request) ? "framing" : "other"
        )
        assert.deepStrictEqual(kinds, ["plan", "section", "section", "framing", "framing"])
        // The framing reads the written sections.
        const framing = (yield* reportCalls).find((c) => isFraming(c.request))
        assert.include(callText(framing), "## Common equity")
        // Every cited sentence of the report went through the check.
        const claims = ClaimVerification.claimsOf(bodyOf(markdown))
        assert.isAbove(claims.length, 100)
        assert.strictEqual(session.verification?.checked, claims.length)
        // Progress shows the plan and each part as it is written.
        const planned = published.find((e) => e._tag === "ReportPlanned")
        assert.deepStrictEqual(planned?._tag === "ReportPlanned" ? planned.sections : [], ["Common equity", "Leverage"])
        const parts = published.flatMap((e) => (e._tag === "ReportSectionWritten" ? [`${e.part}:${e.title}`] : []))
        assert.sameMembers(parts.slice(0, 2), ["section:Common equity", "section:Leverage"])
        assert.sameMembers(parts.slice(2), ["introduction:introduction", "conclusion:conclusion"])
      }).pipe(Effect.provide(ScriptedRun.layer({ pages, rounds, report: longReport() })))
  )
})

describe("A report's shape", () => {
  const outline = ["Background", "Common equity", "Leverage", "Liquidity", "Open questions"]

  it.effect(
    "a given outline's sections are the report's sections, in its order, each given its share of the words",
    () =>
      Effect.gen(function* () {
        const session = yield* Pipeline.research(question, { config: { reportOutline: outline, reportWords: 2_000 } })
        const markdown = session.report?.markdown ?? ""
        const headings = [...markdown.matchAll(/^## (.+)$/gm)].map((m) => m[1])
        assert.deepStrictEqual(headings, [...outline, "Sources"])
        const targets = (yield* reportCalls).filter((c) => isSection(c.request)).map((c) => targetOf(c.request))
        assert.deepStrictEqual(targets, [360, 360, 360, 360, 360])
        const words = ReportShape.countWords(bodyOf(markdown))
        assert.isTrue(ReportShape.withinTolerance(words, 2_000), `${words} words`)
      }).pipe(Effect.provide(ScriptedRun.layer({ pages, rounds, report: longReport() })))
  )

  it.effect("a section that misses its length gets one second pass, told its length and target, and lands", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research(question, { config: { reportWords: 3_000 } })
      const passes = (yield* reportCalls).filter((c) => isSection(c.request) && c.request.messages.length > 1)
      assert.strictEqual(passes.length, 2)
      assert.include(callText(passes[0]), "That text has 300 words; it should have about 1200.")
      const words = ReportShape.countWords(bodyOf(session.report?.markdown ?? ""))
      assert.isTrue(ReportShape.withinTolerance(words, 3_000), `${words} words`)
    }).pipe(Effect.provide(ScriptedRun.layer({ pages, rounds, report: longReport({ shortFirst: true }) })))
  )

  it.effect("a short report asked for in words, an outline and instructions is one call told all three", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research(question, {
        config: { reportWords: 600, reportOutline: ["Equity", "Leverage"], reportInstructions: "For a bank's board." }
      })
      const calls = yield* reportCalls
      assert.strictEqual(calls.length, 2)
      const system = calls[0]?.request.system ?? ""
      assert.include(system, "Length: about 600 words (between 480 and 720)")
      assert.include(system, "1. Equity\n2. Leverage")
      assert.include(system, "For a bank's board.")
      // The first answer was 143 words (its headings count): the second pass was told so, and its answer stands.
      assert.include(callText(calls[1]), "That text has 143 words; it should have about 600.")
      const words = ReportShape.countWords(bodyOf(session.report?.markdown ?? ""))
      assert.isTrue(ReportShape.withinTolerance(words, 600), `${words} words`)
    }).pipe(
      Effect.provide(
        ScriptedRun.layer({
          pages,
          rounds,
          report: (request) =>
            request.messages.length > 1
              ? `# Capital\n\n## Equity\n\n${prose(300, 1)}\n\n## Leverage\n\n${prose(300, 2)}`
              : `# Capital\n\n## Equity\n\n${prose(70, 1)}\n\n## Leverage\n\n${prose(70, 2)}`
        })
      )
    )
  )

  it.effect("a report written in one call that strays from the outline given is written again by its sections", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research(question, { config: { reportOutline: ["Equity", "Leverage"] } })
      const headings = [...(session.report?.markdown ?? "").matchAll(/^## (.+)$/gm)].map((m) => m[1])
      assert.deepStrictEqual(headings, ["Equity", "Leverage", "Sources"])
      const kinds = (yield* reportCalls).map((c) =>
        isPlan(c.request) ? "plan" : isSection(c.request) ? "section" : "other"
      )
      assert.deepStrictEqual(kinds.slice(0, 4), ["other", "plan", "section", "section"])
    }).pipe(Effect.provide(ScriptedRun.layer({ pages, rounds, report: longReport() })))
  )

  it.effect("under a budget, a long report is planned and written within it, its reserve holding the words asked", () =>
    Effect.gen(function* () {
      const session = yield* Pipeline.research(question, {
        config: { reportWords: 2_000, budget: { maxTokens: 60_000 } }
      })
      assert.strictEqual(session.status, "completed")
      const spent = session.usage.reduce((n, u) => n + u.inputTokens + u.outputTokens, 0)
      assert.isAtMost(spent, 60_000)
      const kinds = (yield* reportCalls).map((c) =>
        isPlan(c.request) ? "plan" : isSection(c.request) ? "section" : "other"
      )
      assert.deepStrictEqual(kinds.slice(0, 3), ["plan", "section", "section"])
      const words = ReportShape.countWords(bodyOf(session.report?.markdown ?? ""))
      assert.isTrue(ReportShape.withinTolerance(words, 2_000), `${words} words`)
    }).pipe(Effect.provide(ScriptedRun.layer({ pages, rounds, report: longReport() })))
  )
})
