import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Errors from "../src/Errors.js"
import * as Compression from "../src/phases/Compression.js"
import { ScriptedModel } from "../src/testing/index.js"
import { callsOf, compressionReply, directive, lastMessage, runUnit } from "./support/researchUnit.js"

const nrel = "https://www.nrel.gov/pv/cell-efficiency"
const fraunhofer = "https://ise.fraunhofer.de/press/record"

// One search returning both pages, then completion: the unit then has sources [1] and [2].
const researcher = [
  ScriptedModel.toolCalls({ name: "webSearch", arguments: { queries: ["record efficiency"] } }),
  ScriptedModel.toolCalls({ name: "researchComplete", arguments: { summary: "Both labs report 47.6% [1][2]." } })
]
const web = { route: () => [nrel, fraunhofer] }

const findings =
  "NREL's chart lists a certified record of 47.6% for a four-junction cell [1]. Fraunhofer ISE reports the same " +
  "47.6% figure, measured under concentrated sunlight [2]."

describe("Compression", () => {
  it.effect("keeps a rewrite that is long enough and cites the unit's sources", () =>
    Effect.gen(function* () {
      const { output } = yield* runUnit({ researcher, web, compression: [compressionReply(findings)] })
      assert.isTrue(output.result.compressed)
      assert.strictEqual(output.result.findings, findings)
      assert.strictEqual(
        output.result.supervisorSummary,
        "Covered: records\nKey findings: 47.6% [1]\nConfidence: medium\nGaps: none"
      )
      assert.deepStrictEqual(output.result.sourceIds, ["d1-s1", "d1-s2"])
    })
  )

  it.effect("gives the compression model the sources as numbered, delimited data and the instruction last", () =>
    Effect.gen(function* () {
      const { calls } = yield* runUnit({ researcher, web, compression: [compressionReply(findings)] })
      const [call] = callsOf(calls, "compression")
      assert.isDefined(call)
      const prompt = lastMessage(call.request)
      assert.include(prompt, `<untrusted_data kind="source" label="[1]" url="${nrel}"`)
      assert.include(prompt, `<untrusted_data kind="source" label="[2]" url="${fraunhofer}"`)
      assert.include(prompt, "The user's question: What is the record efficiency of solar cells?")
      assert.include(prompt, "The researcher's summary:\nBoth labs report 47.6% [1][2].")
      assert.isTrue(prompt.trimEnd().endsWith("(at most 1500 characters)."))
      assert.include(call.request.system, "not summarising")
    })
  )

  it.effect("lets the raw notes stand when the rewrite is under the minimum share of them", () =>
    Effect.gen(function* () {
      const { output } = yield* runUnit({ researcher, web, compression: [compressionReply("47.6% [1].")] })
      assert.isFalse(output.result.compressed)
      assert.include(output.result.findings, `[1] Best Research-Cell Efficiency Chart (${nrel})`)
      assert.include(output.result.findings, "Researcher's summary:\nBoth labs report 47.6% [1][2].")
      assert.include(output.result.supervisorSummary, "Covered: Find the current record efficiency")
      assert.include(output.result.supervisorSummary, "Key findings: Both labs report 47.6% [1][2].")
    })
  )

  it.effect("keeps a rewrite of exactly the minimum share", () =>
    Effect.gen(function* () {
      const raw = yield* runUnit({ researcher, web, compression: [compressionReply("x [1]")] })
      const rawLength = raw.output.result.findings.length
      const exact = `${"x".repeat(Math.ceil(rawLength * 0.1) - 4)} [1]`
      const { output } = yield* runUnit({ researcher, web, compression: [compressionReply(exact)] })
      assert.isTrue(output.result.compressed)
      const under = `${"x".repeat(Math.ceil(rawLength * 0.1) - 5)} [1]`
      const short = yield* runUnit({ researcher, web, compression: [compressionReply(under)] })
      assert.isFalse(short.output.result.compressed)
    })
  )

  it.effect("lets the raw notes stand when the rewrite cites no source of the unit", () =>
    Effect.gen(function* () {
      const uncited = findings.replace(/\[\d\]/g, "[7]")
      const { output } = yield* runUnit({ researcher, web, compression: [compressionReply(uncited)] })
      assert.isFalse(output.result.compressed)
      assert.include(output.result.findings, nrel)
    })
  )

  it.effect("lets the raw notes stand when the compression model fails, keeping the error out of them", () =>
    Effect.gen(function* () {
      const { output } = yield* runUnit({
        researcher,
        web,
        compression: [new Errors.ProviderQuotaExhausted({ provider: "scripted" })]
      })
      assert.strictEqual(output.result.status, "completed")
      assert.isFalse(output.result.compressed)
      assert.isUndefined(output.result.error)
      assert.notInclude(output.result.findings, "quota")
      assert.include(output.result.findings, "47.6 percent")
    })
  )

  it.effect("retries an overflowing compression with smaller sources and the instruction still in place", () =>
    Effect.gen(function* () {
      const { calls, output } = yield* runUnit({
        researcher,
        web,
        compression: [
          new Errors.ContextWindowExceeded({ model: "scripted-model", limit: 250, requested: 600 }),
          compressionReply(findings)
        ]
      })
      const [first, second] = callsOf(calls, "compression").map((call) => lastMessage(call.request))
      assert.isDefined(first)
      assert.isDefined(second)
      assert.isBelow(second.length, first.length)
      assert.include(second, "Now rewrite the material above into the findings")
      assert.include(second, "The user's question: What is the record efficiency of solar cells?")
      assert.include(second, "The research assignment:")
      // Every source block that is still there is closed: truncation happens before the delimiters are added.
      assert.strictEqual(second.split("<untrusted_data").length, second.split("</untrusted_data>").length)
      assert.isTrue(output.result.compressed)
    })
  )

  it.effect("builds the supervisor brief without a model when the rewrite has none", () =>
    Effect.gen(function* () {
      const { output } = yield* runUnit({ researcher, web, compression: [findings] })
      assert.isTrue(output.result.compressed)
      assert.strictEqual(output.result.findings, findings)
      assert.include(output.result.supervisorSummary, "Key findings: NREL's chart lists")
      assert.include(output.result.supervisorSummary, "Confidence:")
    })
  )

  it.effect("caps the supervisor brief", () =>
    Effect.gen(function* () {
      const brief = `Covered: records. ${"Key findings: a long sentence about records [1]. ".repeat(20)}`
      const { output } = yield* runUnit({
        researcher,
        web,
        compression: [compressionReply(findings, brief)],
        config: { supervisorSummaryMaxChars: 200 }
      })
      assert.isAtMost(output.result.supervisorSummary.length, 200)
      assert.isTrue(output.result.supervisorSummary.startsWith("Covered: records."))
    })
  )

  it.effect("skips the model when there is nothing to compress", () =>
    Effect.gen(function* () {
      const { calls, output } = yield* runUnit({
        researcher: [ScriptedModel.toolCalls({ name: "researchComplete", arguments: { summary: "Nothing found." } })]
      })
      assert.strictEqual(callsOf(calls, "compression").length, 0)
      assert.isFalse(output.result.compressed)
      assert.include(output.result.findings, "No sources were found")
      assert.include(output.result.supervisorSummary, "Confidence: low")
    })
  )

  it("splits the answer at the supervisor brief heading and drops the findings heading", () => {
    assert.deepStrictEqual(Compression.splitBrief("## Findings\nA [1].\n\n### Supervisor Brief\nCovered: x"), {
      findings: "A [1].",
      brief: "Covered: x"
    })
    assert.deepStrictEqual(Compression.splitBrief("<think>plan</think>A [1]."), {
      findings: "A [1].",
      brief: undefined
    })
  })

  it("recognises citations of the unit's sources only", () => {
    assert.isTrue(Compression.citesSource("as shown [2]", 2))
    assert.isTrue(Compression.citesSource("as shown [3, 2]", 2))
    assert.isFalse(Compression.citesSource("as shown [3]", 2))
    assert.isFalse(Compression.citesSource("as shown [0] and (2)", 2))
  })

  it("builds a plain supervisor brief within its limit", () => {
    const text = Compression.plainSupervisorSummary({
      directive,
      seen: [],
      keyText: undefined,
      maxChars: 120,
      note: "not assessed"
    })
    assert.isAtMost(text.length, 120)
    assert.isTrue(text.startsWith("Covered: Find the current record"))
  })
})
