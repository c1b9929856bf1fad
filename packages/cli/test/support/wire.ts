/**
 * What the wire-conformance tests share: a research run on one vendor through the real providers and the emulator,
 * and the tools and formats read back from the request bodies the library sent (the schemas as they were on the
 * wire, not as our own types describe them).
 */
import { Pipeline, ResearchEvents, Resilience, type Session, Summarizer } from "@deep-research/core"
import { MemorySessionStore } from "@deep-research/core/testing"
import { Evaluation } from "@deep-research/evaluation"
import { ModelSpec, Tavily } from "@deep-research/providers"
import type { Emulator } from "@deep-research/emulator"
import { Effect, Layer, Redacted, Ref } from "effect"

/** How the library talks to the model: which vendor, and through which mechanism. */
export type Route = "openai" | "anthropic" | "actions"

/** The model settings of a route: every role on the same vendor. */
export const routerSpecs = (
  emulator: Emulator.Handle,
  route: Route,
  options?: { readonly stream?: boolean | undefined }
): ModelSpec.RouterSpecs => {
  const stream = options?.stream === true ? { stream: true } : {}
  switch (route) {
    case "openai":
      return {
        default: "openai:gpt-4.1",
        tiers: { efficient: "openai:gpt-4.1-mini" },
        providers: { openai: { apiKey: Redacted.make("sk-wire"), baseUrl: emulator.baseUrl("openai"), ...stream } }
      }
    case "anthropic":
      return {
        default: "anthropic:claude-sonnet-4-6",
        tiers: { efficient: "anthropic:claude-haiku-4-5" },
        providers: {
          anthropic: { apiKey: Redacted.make("sk-ant-wire"), baseUrl: emulator.baseUrl("anthropic"), ...stream }
        }
      }
    case "actions":
      // A local model with neither tool calling nor JSON schemas: the JSON action protocol and prompted JSON.
      return {
        default: "openai:local-model",
        providers: {
          openai: {
            baseUrl: emulator.baseUrl("openai"),
            capabilities: { toolCalling: false, structuredOutput: false },
            ...stream
          }
        }
      }
  }
}

/** The layers of a run on one route, with the events it publishes kept. */
export const researchLayer = (emulator: Emulator.Handle, route: Route) =>
  Layer.mergeAll(
    Summarizer.layer,
    Tavily.layer({ apiKey: Redacted.make("tvly-wire"), baseUrl: emulator.baseUrl("tavily") }),
    MemorySessionStore.layer
  ).pipe(Layer.provideMerge(ModelSpec.layer(routerSpecs(emulator, route))), Layer.provide(Resilience.layerDefault))

/** A research run, its events, and the evaluation of its report (the evaluation role's formats go out too). */
export const researchAndEvaluate = (emulator: Emulator.Handle, route: Route, question: string) =>
  Effect.gen(function* () {
    const events = yield* Ref.make<ReadonlyArray<ResearchEvents.EventInput>>([])
    const collector: ResearchEvents.Service = {
      publish: (event) => Ref.update(events, (all) => [...all, event]),
      subscribe: Effect.die("the wire tests read the events they collect")
    }
    const run = Effect.gen(function* () {
      const session: Session.Session = yield* Pipeline.research(question, {
        config: { maxSupervisionRounds: 3, maxDirectivesPerRound: 5 }
      })
      yield* Evaluation.evaluateSession(session, { claims: { maxClaims: 2 } })
      return session
    })
    const session = yield* run.pipe(
      Effect.provide(researchLayer(emulator, route)),
      Effect.provideService(ResearchEvents.ResearchEvents, collector)
    )
    return { session, events: yield* Ref.get(events) }
  })

// =============================================================================
// Reading the wire
// =============================================================================

/** A tool or a response format as one request carried it. */
export interface Sent {
  readonly kind: "tool" | "format"
  readonly name: string
  readonly schema: Readonly<Record<string, unknown>>
  readonly strict: boolean
  /** The names of the tools that went out together (which agent made the request). */
  readonly toolset: ReadonlyArray<string>
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const records = (value: unknown): ReadonlyArray<Readonly<Record<string, unknown>>> =>
  Array.isArray(value) ? value.filter(isRecord) : []

const text = (value: unknown): string =>
  typeof value === "string"
    ? value
    : records(value)
        .map((part) => (typeof part["text"] === "string" ? part["text"] : ""))
        .join("\n")

/** The first balanced JSON object after a marker. */
const jsonAfter = (source: string, marker: string, from = 0): unknown => {
  const at = source.indexOf(marker, from)
  if (at < 0) return undefined
  const start = source.indexOf("{", at + marker.length)
  let depth = 0
  let inString = false
  let escaped = false
  for (let i = start; i >= 0 && i < source.length; i++) {
    const c = source[i]
    if (inString) {
      if (escaped) escaped = false
      else if (c === "\\") escaped = true
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === "{") depth++
    else if (c === "}" && --depth === 0) return JSON.parse(source.slice(start, i + 1))
  }
  return undefined
}

const openaiSent = (body: Readonly<Record<string, unknown>>): ReadonlyArray<Sent> => {
  const tools = records(body["tools"]).map((tool) => (isRecord(tool["function"]) ? tool["function"] : {}))
  const toolset = tools.map((fn) => String(fn["name"]))
  const sent: Array<Sent> = tools.map((fn) => ({
    kind: "tool",
    name: String(fn["name"]),
    schema: isRecord(fn["parameters"]) ? fn["parameters"] : {},
    strict: fn["strict"] === true,
    toolset
  }))
  const format = body["response_format"]
  const spec = isRecord(format) && isRecord(format["json_schema"]) ? format["json_schema"] : undefined
  if (spec !== undefined && isRecord(spec["schema"])) {
    sent.push({
      kind: "format",
      name: String(spec["name"]),
      schema: spec["schema"],
      strict: spec["strict"] === true,
      toolset
    })
  }
  return sent
}

const anthropicSent = (body: Readonly<Record<string, unknown>>): ReadonlyArray<Sent> => {
  const tools = records(body["tools"]).filter((tool) => isRecord(tool["input_schema"]))
  const choice = body["tool_choice"]
  const forced = isRecord(choice) && choice["type"] === "tool" ? String(choice["name"]) : undefined
  const toolset = tools.map((tool) => String(tool["name"])).filter((name) => name !== forced)
  return tools.map((tool) => ({
    kind: tool["name"] === forced && toolset.length === 0 ? "format" : "tool",
    name: String(tool["name"]),
    schema: isRecord(tool["input_schema"]) ? tool["input_schema"] : {},
    strict: false,
    toolset
  }))
}

/** Under the JSON action protocol the tools and the format travel in the prompt; their schemas are read from it. */
const actionsSent = (body: Readonly<Record<string, unknown>>): ReadonlyArray<Sent> => {
  const messages = records(body["messages"])
  const prompt = messages.map((message) => text(message["content"])).join("\n")
  const sent: Array<Sent> = []
  const toolset = [...prompt.matchAll(/^- ([A-Za-z0-9_-]+): [^\n]*\n {2}arguments: /gm)].map((m) => m[1] ?? "")
  for (const match of prompt.matchAll(/^- ([A-Za-z0-9_-]+): [^\n]*\n {2}arguments: /gm)) {
    const schema = jsonAfter(prompt, "arguments: ", match.index)
    if (isRecord(schema)) sent.push({ kind: "tool", name: match[1] ?? "", schema, strict: false, toolset })
  }
  const format = jsonAfter(prompt, "matching this JSON schema:")
  if (isRecord(format)) sent.push({ kind: "format", name: "prompted", schema: format, strict: false, toolset })
  return sent
}

/** The tools and formats of every model request a route made, each distinct one once. */
export const sentOn = (emulator: Emulator.Handle, route: Route) =>
  Effect.map(emulator.requests(route === "anthropic" ? "anthropic.messages" : "openai.chat"), (requests) => {
    const seen = new Map<string, Sent>()
    for (const request of requests) {
      if (!isRecord(request.body)) continue
      const sent =
        route === "openai"
          ? openaiSent(request.body)
          : route === "anthropic"
            ? anthropicSent(request.body)
            : actionsSent(request.body)
      for (const item of sent) {
        const key = `${item.kind}:${item.name}:${item.toolset.join(",")}:${JSON.stringify(item.schema)}`
        if (!seen.has(key)) seen.set(key, item)
      }
    }
    return [...seen.values()]
  })
