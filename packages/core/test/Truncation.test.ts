import { assert, describe, it } from "@effect/vitest"
import * as LanguageModel from "../src/LanguageModel.js"
import * as Tokens from "../src/Tokens.js"
import * as Truncation from "../src/Truncation.js"
import type { Section } from "../src/Truncation.js"

/**
 * Text of `length` characters made of sentences, so cuts can find boundaries, at about 4 characters a token under the
 * estimate whatever the word (its first 4 letters, padded), so that sizes in characters and tokens read alike here.
 */
const prose = (length: number, word = "data"): string => {
  const sentence = `The ${word.slice(0, 4).padEnd(4, "x")} rose, as did the rest. `
  return sentence.repeat(Math.ceil(length / sentence.length)).slice(0, length)
}

const section = (name: string, kind: Section["kind"], length: number, quality?: number | undefined): Section => ({
  name,
  kind,
  content: prose(length, name),
  ...(quality === undefined ? {} : { quality })
})

const named = (sections: ReadonlyArray<Section>, name: string): Section | undefined =>
  sections.find((s) => s.name === name)

describe("Truncation.truncateSections", () => {
  const instruction = section("instruction", "instruction", 400)
  const question = section("question", "question", 40)
  const brief = section("brief", "brief", 400)

  it("returns the sections as they are when they fit", () => {
    const sections = [instruction, question, section("a", "source", 400)]
    assert.strictEqual(Truncation.truncateSections(sections, 1_000), sections)
  })

  it("shortens the longest source first and leaves shorter ones and the protected sections alone", () => {
    const sections = [instruction, question, section("a", "source", 4_000), section("b", "source", 800)]
    const result = Truncation.truncateSections(sections, 1_000)
    assert.isAtMost(Truncation.sectionTokens(result), 1_000)
    assert.deepStrictEqual(
      result.map((s) => s.name),
      ["instruction", "question", "a", "b"]
    )
    assert.strictEqual(named(result, "instruction"), instruction)
    assert.strictEqual(named(result, "question"), question)
    assert.strictEqual(named(result, "b")?.content, sections[3]?.content)
    const a = named(result, "a")?.content ?? ""
    assert.isBelow(a.length, 4_000)
    assert.isTrue(a.endsWith(Truncation.truncationMarker))
    assert.isTrue(sections[2]?.content.startsWith(a.slice(0, -Truncation.truncationMarker.length)))
  })

  it("shortens sections to no less than half their length, dropping a source instead", () => {
    const sections = [instruction, section("a", "source", 4_000, 0.9), section("b", "source", 4_000, 0.1)]
    // Fits at 1,800 characters each, but that is under half: the poorer source goes and the other keeps more.
    const result = Truncation.truncateSections(sections, 1_000)
    assert.isAtMost(Truncation.sectionTokens(result), 1_000)
    assert.deepStrictEqual(
      result.map((s) => s.name),
      ["instruction", "a"]
    )
    assert.isAtLeast(named(result, "a")?.content.length ?? 0, 3_000)
  })

  it("halves every long section before dropping any source", () => {
    const sections = [instruction, section("a", "source", 2_000, 0.9), section("b", "source", 2_000, 0.1)]
    const result = Truncation.truncateSections(sections, 620)
    assert.deepStrictEqual(
      result.map((s) => s.name),
      ["instruction", "a", "b"]
    )
    for (const name of ["a", "b"]) assert.isAtLeast(named(result, name)?.content.length ?? 0, 1_000)
  })

  it("drops the lowest-quality source when halving is not enough, keeping the better ones", () => {
    const sections = [
      instruction,
      section("good", "source", 2_000, 0.9),
      section("poor", "source", 2_000, 0.2),
      section("fair", "source", 2_000, 0.5)
    ]
    const result = Truncation.truncateSections(sections, 700)
    assert.isAtMost(Truncation.sectionTokens(result), 700)
    assert.deepStrictEqual(
      result.map((s) => s.name),
      ["instruction", "good", "fair"]
    )
  })

  it("drops unrated sources before rated ones", () => {
    const sections = [instruction, section("rated", "source", 2_000, 0.1), section("unrated", "source", 2_000)]
    const result = Truncation.truncateSections(sections, 500)
    assert.deepStrictEqual(
      result.map((s) => s.name),
      ["instruction", "rated"]
    )
  })

  it("drops sources but keeps findings, then cuts the findings' characters", () => {
    const sections = [
      instruction,
      question,
      brief,
      section("findings", "findings", 8_000),
      section("s", "source", 4_000, 1)
    ]
    const result = Truncation.truncateSections(sections, 800)
    assert.isAtMost(Truncation.sectionTokens(result), 800)
    assert.deepStrictEqual(
      result.map((s) => s.name),
      ["instruction", "question", "brief", "findings"]
    )
    assert.isBelow(named(result, "findings")?.content.length ?? 0, 4_000)
  })

  it("cuts the characters of a lone source rather than dropping it", () => {
    const sections = [instruction, section("only", "source", 40_000, 0.1)]
    const result = Truncation.truncateSections(sections, 1_100)
    assert.isAtMost(Truncation.sectionTokens(result), 1_100)
    assert.isAbove(named(result, "only")?.content.length ?? 0, 3_000)
  })

  it("never touches the instructions, the question or the brief, even when they alone are over the target", () => {
    const sections = [instruction, question, brief, section("s", "source", 4_000), section("f", "findings", 4_000)]
    const result = Truncation.truncateSections(sections, 50)
    assert.deepStrictEqual(result, [instruction, question, brief])
  })
})

describe("Truncation.cutText", () => {
  it("cuts at a paragraph end in the last fifth and marks the cut", () => {
    const text = "a".repeat(900) + "\n\n" + "b".repeat(900)
    const cut = Truncation.cutText(text, 1_000)
    assert.strictEqual(cut, "a".repeat(900) + Truncation.truncationMarker)
  })

  it("cuts hard when no boundary is near, staying within the limit", () => {
    const cut = Truncation.cutText("x".repeat(5_000), 1_000)
    assert.strictEqual(cut.length, 1_000)
    assert.isTrue(cut.endsWith(Truncation.truncationMarker))
  })

  it("returns short text as it is and nothing when not even the marker fits", () => {
    assert.strictEqual(Truncation.cutText("short", 100), "short")
    assert.strictEqual(Truncation.cutText("x".repeat(100), 10), "")
  })
})

describe("Truncation.truncateConversation", () => {
  const calls = [1, 2, 3].map(
    (n) => new LanguageModel.ToolCall({ id: `call-${n}`, name: "webSearch", arguments: { queries: [`query ${n}`] } })
  )
  const turn = (n: number) => {
    const call = calls[n - 1]!
    return [LanguageModel.assistant(`Turn ${n}`, [call]), LanguageModel.toolResult(call, prose(4_000, `result${n}`))]
  }
  const task = LanguageModel.user("Research the history of the printing press.")
  const finalInstruction = LanguageModel.user("Now write up the findings with citations.")
  const request: LanguageModel.GenerateRequest = {
    system: "You are a researcher.",
    messages: [
      task,
      ...turn(1),
      LanguageModel.user("You have 8 tool calls left."),
      ...turn(2),
      ...turn(3),
      finalInstruction
    ],
    maxOutputTokens: 1_000
  }
  const total = Tokens.estimateRequestTokens(request)

  const callIdsOf = (messages: ReadonlyArray<LanguageModel.Message>) =>
    messages.flatMap((m) => (m._tag === "assistant" ? m.toolCalls.map((c) => c.id) : []))
  const resultIdsOf = (messages: ReadonlyArray<LanguageModel.Message>) =>
    messages.flatMap((m) => (m._tag === "tool" ? [m.toolCallId] : []))

  it("returns the request as it is when it fits", () => {
    assert.strictEqual(Truncation.truncateConversation(request, total), request)
  })

  it("drops the oldest tool-call turn first, with its results and notes", () => {
    const result = Truncation.truncateConversation(request, total - 500)
    assert.isAtMost(Tokens.estimateRequestTokens(result), total - 500)
    assert.deepStrictEqual(callIdsOf(result.messages), ["call-2", "call-3"])
    assert.deepStrictEqual(resultIdsOf(result.messages), ["call-2", "call-3"])
    assert.isFalse(result.messages.some((m) => m._tag === "user" && m.content.includes("tool calls left")))
    assert.strictEqual(result.system, request.system)
    assert.strictEqual(result.maxOutputTokens, 1_000)
  })

  it("keeps the system prompt, the task, the latest turn and the final instruction when dropping all it can", () => {
    const result = Truncation.truncateConversation(request, 1_200)
    assert.strictEqual(result.system, request.system)
    assert.strictEqual(result.messages[0], task)
    assert.strictEqual(result.messages[result.messages.length - 1], finalInstruction)
    assert.deepStrictEqual(callIdsOf(result.messages), ["call-3"])
    assert.deepStrictEqual(resultIdsOf(result.messages), ["call-3"])
    assert.isAtMost(Tokens.estimateRequestTokens(result), 1_200)
  })

  it("cuts the latest tool results when dropping turns is not enough, never the user messages", () => {
    const result = Truncation.truncateConversation(request, 300)
    assert.strictEqual(result.messages[0], task)
    assert.strictEqual(result.messages[result.messages.length - 1], finalInstruction)
    const toolResult = result.messages.find((m) => m._tag === "tool")
    assert.isDefined(toolResult)
    assert.isTrue(toolResult?.content.endsWith(Truncation.truncationMarker))
    assert.isAtMost(Tokens.estimateRequestTokens(result), 300)
  })
})
