/**
 * Research on the real vendor APIs, checked from the wire: runs with every role on OpenAI, on Anthropic and on a
 * model without tool calling go through the real SDKs and the emulator (which refuses what the vendors refuse), and
 * the tools and formats those runs sent are read back from the request bodies. Values generated from each schema
 * *as it was sent* (json-schema-faker, seeded by fast-check) are returned the way each vendor returns them, streamed
 * and not, and must decode to the same values through the library.
 */
import {
  ClaimVerification,
  LanguageModel,
  Research,
  ResearchConfig,
  StructuredOutput,
  Summarizer,
  Tool
} from "@deep-research/core"
import * as ActionProtocol from "@deep-research/core/ActionProtocol"
import { ScriptedRun } from "@deep-research/core/testing"
import { Judge } from "@deep-research/evaluation"
import { ModelSpec } from "@deep-research/providers"
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import fc from "fast-check"
import { generateSync } from "json-schema-faker"
import { type Route, researchAndEvaluate, routerSpecs, type Sent, sentOn } from "./support/wire.js"

const question = "How do heat pumps compare with gas boilers for home heating?"

// =============================================================================
// The library's side: what each name on the wire decodes with
// =============================================================================

/** A tool of the library, with its own decoder: the tools differ in their argument types. */
interface Decoder {
  readonly name: string
  readonly definition: Tool.ToolDefinition
  readonly schema: Schema.Schema.AnyNoContext
  readonly decode: (args: unknown) => Either.Either<unknown, string>
}

const decoder = <A, I>(tool: Tool.Tool<A, I>): Decoder => ({
  name: tool.name,
  definition: tool.definition,
  schema: tool.schema,
  decode: (args) => Tool.decodeArguments(tool, args)
})

const researcherTools = ScriptedRun.researcherTools(ResearchConfig.defaults)
const supervisorTools: ReadonlyArray<Decoder> = [
  decoder(ScriptedRun.supervisorTools.think),
  decoder(ScriptedRun.supervisorTools.conductResearch),
  decoder(ScriptedRun.supervisorTools.researchComplete)
]
const researcherToolList: ReadonlyArray<Decoder> = [
  decoder(researcherTools.webSearch),
  decoder(researcherTools.extractContent),
  decoder(researcherTools.think),
  decoder(researcherTools.researchComplete)
]

/** The structured outputs the library asks for, by the name it gives them. */
const formats: Readonly<Record<string, Schema.Schema.AnyNoContext>> = {
  clarification: Research.Clarification,
  research_brief: Research.Brief,
  source_summary: Summarizer.Answer,
  evaluation: Judge.Answer,
  claim_verdicts: ClaimVerification.Answer
}

const toolsetOf = (sent: Sent): ReadonlyArray<Decoder> =>
  sent.toolset.includes("conductResearch") ? supervisorTools : researcherToolList

/** A prompted format carries no name: the schema it was sent for is found by its JSON schema. */
const formatSchema = (sent: Sent): Schema.Schema.AnyNoContext | undefined => {
  if (sent.name !== "prompted") return formats[sent.name]
  return Object.values(formats).find(
    (schema) => JSON.stringify(Tool.jsonSchemaOf(schema)) === JSON.stringify(sent.schema)
  )
}

// =============================================================================
// Comparing values
// =============================================================================

/** Nulls stand for absent optional fields in strict mode, and the library drops them: compare without them. */
const withoutNulls = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(withoutNulls)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, field]) => field !== null)
        .map(([key, field]) => [key, withoutNulls(field)])
    )
  }
  return value
}

/** Every field of `expected` is in `actual` with the same value (decoding may add defaults of its own). */
const contains = (actual: unknown, expected: unknown): boolean => {
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => contains(actual[i], e))
    )
  }
  if (typeof expected === "object" && expected !== null) {
    return (
      typeof actual === "object" &&
      actual !== null &&
      Object.entries(expected).every(([key, field]) => contains(Object(actual)[key], field))
    )
  }
  return Object.is(actual, expected)
}

const assertDecodesToSame = (schema: Schema.Schema.AnyNoContext, decoded: unknown, generated: unknown) => {
  const expected = withoutNulls(Tool.unwrapAnswer(schema, generated))
  const actual = withoutNulls(Schema.encodeSync(schema)(decoded))
  assert.isTrue(contains(actual, expected), `${JSON.stringify(generated)} decoded as ${JSON.stringify(actual)}`)
}

// =============================================================================
// The vendor's side: a generated value returned as that vendor returns it
// =============================================================================

const toolCallReply = (route: Route, name: string, value: unknown) => {
  switch (route) {
    case "openai":
      return Emulator.openaiToolCalls([{ name, arguments: value }])
    case "anthropic":
      return Emulator.anthropicToolUse([{ name, arguments: value }])
    case "actions":
      return Emulator.openaiText(JSON.stringify({ actions: [{ tool: name, arguments: value }] }))
  }
}

const formatReply = (route: Route, name: string, value: unknown) => {
  switch (route) {
    case "openai":
    case "actions":
      return Emulator.openaiText(JSON.stringify(value))
    case "anthropic":
      return Emulator.anthropicToolUse([{ name, arguments: value }])
  }
}

const endpointOf = (route: Route) => (route === "anthropic" ? "anthropic.messages" : "openai.chat")

/** Seeds for the generator; fast-check reports the seed of a value that does not decode. */
const seeds = fc.integer({ min: 0, max: 2 ** 31 - 1 })
const runsPerSchema = 20

const generated = (schema: Readonly<Record<string, unknown>>, seed: number): unknown =>
  generateSync(schema, { seed, maxItems: 4, maxLength: 60 })

const checkTool = (emulator: Emulator.Handle, model: LanguageModel.Service, route: Route, sent: Sent) =>
  Effect.gen(function* () {
    const toolset = toolsetOf(sent)
    const tool = toolset.find((candidate) => candidate.name === sent.name)
    assert.isDefined(tool, `the library sent a tool it has no decoder for: ${sent.name}`)
    if (tool === undefined) return
    const agent = ActionProtocol.wrap(model)
    yield* Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(seeds, (seed) =>
          Effect.runPromise(
            Effect.gen(function* () {
              const value = generated(sent.schema, seed)
              yield* emulator.enqueue(endpointOf(route), toolCallReply(route, sent.name, value))
              const completion = yield* agent.generate({
                system: "Research.",
                messages: [LanguageModel.user("Go on.")],
                tools: toolset.map((t) => t.definition),
                toolChoice: "auto"
              })
              const call = completion.toolCalls.find((c) => c.name === sent.name)
              assert.isDefined(call, `no ${sent.name} call came back`)
              const decoded = tool.decode(call?.arguments)
              if (Either.isLeft(decoded)) assert.fail(`${JSON.stringify(value)} did not decode: ${decoded.left}`)
              else assertDecodesToSame(tool.schema, decoded.right, value)
            })
          )
        ),
        { numRuns: runsPerSchema }
      )
    )
  })

const checkFormat = (emulator: Emulator.Handle, model: LanguageModel.Service, route: Route, sent: Sent) =>
  Effect.gen(function* () {
    const schema = formatSchema(sent)
    assert.isDefined(schema, `the library sent a format it has no decoder for: ${sent.name}`)
    if (schema === undefined) return
    const name = sent.name === "prompted" ? "answer" : sent.name
    yield* Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(seeds, (seed) =>
          Effect.runPromise(
            Effect.gen(function* () {
              const value = generated(sent.schema, seed)
              yield* emulator.enqueue(endpointOf(route), formatReply(route, name, value))
              const answer = yield* StructuredOutput.generateObject(
                model,
                schema,
                { system: "Answer.", messages: [LanguageModel.user("Go on.")] },
                { name, retries: 0 }
              ).pipe(Effect.either)
              if (Either.isLeft(answer)) assert.fail(`${JSON.stringify(value)} did not decode: ${answer.left.message}`)
              else assertDecodesToSame(schema, answer.right.value, value)
            })
          )
        ),
        { numRuns: runsPerSchema }
      )
    )
  })

// =============================================================================
// Tests
// =============================================================================

const routes: ReadonlyArray<Route> = ["openai", "anthropic", "actions"]

describe("research on the vendors' wire", () => {
  for (const route of routes) {
    it.live(
      `${route}: every role on it delegates, researches, cites and reports; then every tool and format it sent round-trips`,
      () =>
        Effect.gen(function* () {
          const emulator = yield* Emulator.start()
          yield* Emulator.simulate(emulator, { directives: 7 })
          const { session, events } = yield* researchAndEvaluate(emulator, route, question)

          // End to end: nothing the library sent was refused, and the research really ran.
          assert.strictEqual(session.status, "completed")
          assert.deepStrictEqual(
            events.filter((e) => e._tag === "ToolCallRejected"),
            []
          )
          const [first] = session.rounds
          // The model made 7 conductResearch calls: 5 issued (the per-round cap), 2 deferred.
          assert.strictEqual(first?.directives.length, 5)
          assert.strictEqual(first?.deferred.length, 2)
          assert.strictEqual(events.filter((e) => e._tag === "DirectiveIssued").length, first?.directives.length)
          assert.isTrue(first?.results.every((r) => r.status === "completed"))
          assert.isAbove(session.sources.length, 0)
          assert.isAbove(session.report?.citations.length ?? 0, 0)
          assert.match(session.report?.markdown ?? "", /\[\d+\]/)

          // Every tool and format those requests carried, generated from the schema as sent.
          const sent = yield* sentOn(emulator, route)
          const names = new Set(sent.map((s) => `${s.kind}:${s.name}`))
          for (const expected of ["tool:conductResearch", "tool:researchComplete", "tool:webSearch", "tool:think"]) {
            assert.isTrue(names.has(expected), `${route} sent no ${expected}`)
          }
          assert.isAtLeast(sent.filter((s) => s.kind === "format").length, route === "actions" ? 4 : 5)
          for (const stream of [false, true]) {
            const specs = routerSpecs(emulator, route, { stream })
            const spec = yield* ModelSpec.parse(specs.default)
            const model = yield* ModelSpec.makeModel(spec, specs.providers?.[spec.provider])
            for (const item of sent) {
              yield* item.kind === "tool"
                ? checkTool(emulator, model, route, item)
                : checkFormat(emulator, model, route, item)
            }
          }
        }).pipe(Effect.scoped),
      120_000
    )
  }
})
