import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, FastCheck, Schema } from "effect"
import * as ChatAnswer from "../src/internal/openaiChatAnswer.js"

const decodes = Schema.is(ChatAnswer.WireCompletion)

/** Answers of the expected shape, with a field a server adds that the schema does not name. */
const answers = Arbitrary.make(ChatAnswer.WireCompletion).map((answer) => ({ id: "chatcmpl-1", ...answer }))

/** Where an answer can be broken. */
const places: ReadonlyArray<ReadonlyArray<string | number>> = [
  ["model"],
  ["choices"],
  ["choices", 0],
  ["choices", 0, "finish_reason"],
  ["choices", 0, "message"],
  ["choices", 0, "message", "content"],
  ["choices", 0, "message", "tool_calls"],
  ["choices", 0, "message", "tool_calls", 0, "id"],
  ["choices", 0, "message", "tool_calls", 0, "function"],
  ["choices", 0, "message", "tool_calls", 0, "function", "arguments"],
  ["usage"],
  ["usage", "prompt_tokens"],
  ["usage", "completion_tokens_details"]
]

/** `value` with what is at `path` (when it is there) replaced. */
const replaced = (value: unknown, path: ReadonlyArray<string | number>, replacement: unknown): unknown => {
  const copy: unknown = structuredClone(value)
  let at: unknown = copy
  for (const key of path.slice(0, -1)) at = typeof at === "object" && at !== null ? Reflect.get(at, key) : undefined
  const last = path.at(-1)
  if (typeof at === "object" && at !== null && last !== undefined) Reflect.set(at, last, replacement)
  return copy
}

/** Answers broken at one place: a value of another kind, or none. */
const broken = FastCheck.tuple(
  answers,
  FastCheck.constantFrom(...places),
  FastCheck.oneof(FastCheck.constant(undefined), FastCheck.constant(null), FastCheck.anything())
).map(([answer, path, value]) => replaced(answer, path, value))

describe("The check of an OpenAI answer's shape", () => {
  it("accepts the answers the schema decodes", () => {
    FastCheck.assert(FastCheck.property(answers, (answer) => ChatAnswer.isWireCompletion(answer)))
  })

  it("accepts nothing the schema would refuse", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.oneof(broken, FastCheck.anything()), (value) => {
        if (ChatAnswer.isWireCompletion(value)) assert.isTrue(decodes(value))
      }),
      { numRuns: 2_000 }
    )
  })
})
