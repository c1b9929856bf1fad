/**
 * Traces and metrics as an OpenTelemetry backend receives them: an OTLP/HTTP receiver (node:http on 127.0.0.1) takes
 * what the official exporters send (OTLP JSON, the encoding of the `-http` exporters) from a run against the vendors'
 * emulator, in this process and through the CLI's command with `OTEL_EXPORTER_OTLP_ENDPOINT` set. The attribute names are
 * checked against `@opentelemetry/semantic-conventions/incubating`.
 */
import { Errors, LanguageModel, ModelRouter, Pipeline, Resilience, type Session, Summarizer } from "@deep-research/core"
import { MemorySessionStore, ScriptedModel } from "@deep-research/core/testing"
import { ModelSpec, Tavily } from "@deep-research/providers"
import { Emulator } from "@deep-research/emulator"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import {
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_SYSTEM,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  METRIC_GEN_AI_CLIENT_OPERATION_DURATION,
  METRIC_GEN_AI_CLIENT_TOKEN_USAGE
} from "@opentelemetry/semantic-conventions/incubating"
import { ConfigProvider, Effect, Either, Exit, Layer, Redacted, Schema, Scope } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import * as Runs from "../src/Runs.js"
import * as OtlpExport from "../src/OtlpExport.js"
import { routerSpecs } from "./support/wire.js"
import * as BuiltCli from "./support/builtCli.js"
import * as InProcess from "./support/inProcess.js"

// =============================================================================
// OTLP JSON, as far as the checks read it
// =============================================================================

const AnyValue: Schema.Schema<AnyValue, AnyValueEncoded> = Schema.Struct({
  stringValue: Schema.optional(Schema.String),
  boolValue: Schema.optional(Schema.Boolean),
  intValue: Schema.optional(Schema.Union(Schema.Number, Schema.NumberFromString)),
  doubleValue: Schema.optional(Schema.Number),
  arrayValue: Schema.optional(Schema.Struct({ values: Schema.optional(Schema.Array(Schema.suspend(() => AnyValue))) }))
})
interface AnyValue {
  readonly stringValue?: string | undefined
  readonly boolValue?: boolean | undefined
  readonly intValue?: number | undefined
  readonly doubleValue?: number | undefined
  readonly arrayValue?: { readonly values?: ReadonlyArray<AnyValue> | undefined } | undefined
}
interface AnyValueEncoded {
  readonly stringValue?: string | undefined
  readonly boolValue?: boolean | undefined
  readonly intValue?: number | string | undefined
  readonly doubleValue?: number | undefined
  readonly arrayValue?: { readonly values?: ReadonlyArray<AnyValueEncoded> | undefined } | undefined
}

const KeyValues = Schema.optionalWith(Schema.Array(Schema.Struct({ key: Schema.String, value: AnyValue })), {
  default: () => []
})

const Span = Schema.Struct({
  traceId: Schema.String,
  spanId: Schema.String,
  parentSpanId: Schema.optional(Schema.String),
  name: Schema.String,
  attributes: KeyValues,
  events: Schema.optionalWith(Schema.Array(Schema.Struct({ name: Schema.String, attributes: KeyValues })), {
    default: () => []
  }),
  links: Schema.optionalWith(
    Schema.Array(Schema.Struct({ traceId: Schema.String, spanId: Schema.String, attributes: KeyValues })),
    { default: () => [] }
  )
})
type Span = typeof Span.Type

const Resource = Schema.Struct({ attributes: KeyValues })

const TracesRequest = Schema.Struct({
  resourceSpans: Schema.Array(
    Schema.Struct({ resource: Resource, scopeSpans: Schema.Array(Schema.Struct({ spans: Schema.Array(Span) })) })
  )
})

const DataPoint = Schema.Struct({
  attributes: KeyValues,
  asDouble: Schema.optional(Schema.Number),
  asInt: Schema.optional(Schema.Union(Schema.Number, Schema.NumberFromString)),
  count: Schema.optional(Schema.Union(Schema.Number, Schema.NumberFromString)),
  sum: Schema.optional(Schema.Number)
})
const Metric = Schema.Struct({
  name: Schema.String,
  sum: Schema.optional(
    Schema.Struct({ dataPoints: Schema.Array(DataPoint), isMonotonic: Schema.optional(Schema.Boolean) })
  ),
  histogram: Schema.optional(Schema.Struct({ dataPoints: Schema.Array(DataPoint) }))
})
type Metric = typeof Metric.Type

const MetricsRequest = Schema.Struct({
  resourceMetrics: Schema.Array(
    Schema.Struct({ resource: Resource, scopeMetrics: Schema.Array(Schema.Struct({ metrics: Schema.Array(Metric) })) })
  )
})

const valueOf = (value: AnyValue): unknown =>
  value.stringValue ??
  value.boolValue ??
  value.intValue ??
  value.doubleValue ??
  (value.arrayValue === undefined ? undefined : (value.arrayValue.values ?? []).map(valueOf))

const attributesOf = (
  keyValues: ReadonlyArray<{ readonly key: string; readonly value: AnyValue }>
): Record<string, unknown> => Object.fromEntries(keyValues.map(({ key, value }) => [key, valueOf(value)]))

// =============================================================================
// The receiver
// =============================================================================

interface Received {
  readonly path: string
  readonly contentType: string
  readonly body: string
}

interface Receiver {
  readonly url: string
  readonly received: Array<Received>
  readonly close: () => Promise<void>
}

const startReceiver = (): Promise<Receiver> =>
  new Promise((resolve) => {
    const received: Array<Received> = []
    const server = http.createServer((request, response) => {
      let body = ""
      request.setEncoding("utf8")
      request.on("data", (chunk: string) => (body += chunk))
      request.on("end", () => {
        received.push({ path: request.url ?? "", contentType: request.headers["content-type"] ?? "", body })
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resolve({
        url: `http://127.0.0.1:${port}`,
        received,
        close: () => new Promise((done) => server.close(() => done()))
      })
    })
  })

const spansIn = (received: ReadonlyArray<Received>) =>
  received
    .filter((r) => r.path === "/v1/traces")
    .flatMap((r) => Schema.decodeUnknownSync(Schema.parseJson(TracesRequest))(r.body).resourceSpans)
    .flatMap((rs) =>
      rs.scopeSpans.flatMap((ss) => ss.spans.map((span) => ({ span, resource: attributesOf(rs.resource.attributes) })))
    )

const metricsIn = (received: ReadonlyArray<Received>) =>
  received
    .filter((r) => r.path === "/v1/metrics")
    .flatMap((r) => Schema.decodeUnknownSync(Schema.parseJson(MetricsRequest))(r.body).resourceMetrics)
    .flatMap((rm) =>
      rm.scopeMetrics.flatMap((sm) =>
        sm.metrics.map((metric) => ({ metric, resource: attributesOf(rm.resource.attributes) }))
      )
    )

/** The only element of an array, failing the test otherwise. */
const single = <A>(items: ReadonlyArray<A>, what: string): A => {
  const [item] = items
  if (items.length !== 1 || item === undefined) return assert.fail(`expected one ${what}, got ${items.length}`)
  return item
}

/** The last reading of each data point of a metric (readings are cumulative), by its attributes. */
const lastPoints = (metrics: ReadonlyArray<{ readonly metric: Metric }>, name: string) => {
  const points = new Map<
    string,
    { readonly attributes: Record<string, unknown>; readonly value: number; readonly sum: number | undefined }
  >()
  for (const { metric } of metrics.filter((m) => m.metric.name === name)) {
    for (const point of [...(metric.sum?.dataPoints ?? []), ...(metric.histogram?.dataPoints ?? [])]) {
      const attributes = attributesOf(point.attributes)
      const value = point.asDouble ?? point.asInt ?? point.count ?? 0
      points.set(JSON.stringify(attributes), { attributes, value, sum: point.sum })
    }
  }
  return [...points.values()]
}

// =============================================================================
// Setup
// =============================================================================

const secret = "sk-test-secret-4f1d9a7c0b"
const searchSecret = "tvly-test-secret-93ab12"
const question = "How do heat pumps compare with gas boilers for home heating?"

let scope: Scope.CloseableScope
let emulator: Emulator.Handle
let receiver: Receiver

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  emulator = await Effect.runPromise(Scope.extend(Emulator.start(), scope))
  await Effect.runPromise(Emulator.simulate(emulator))
  receiver = await startReceiver()
}, 120_000)

afterAll(async () => {
  await receiver?.close()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
})

/** The run's layers: OpenAI and Tavily on the emulator, with keys that must never be exported. */
const runLayer = () => {
  const specs = routerSpecs(emulator, "openai")
  return Layer.mergeAll(
    Summarizer.layer,
    Tavily.layer({ apiKey: Redacted.make(searchSecret), baseUrl: emulator.baseUrl("tavily") }),
    MemorySessionStore.layer
  ).pipe(
    Layer.provideMerge(
      ModelSpec.layer({
        ...specs,
        providers: { openai: { apiKey: Redacted.make(secret), baseUrl: emulator.baseUrl("openai") } }
      })
    ),
    Layer.provide(Resilience.layerDefault)
  )
}

const exporting = (captureContent: boolean) =>
  OtlpExport.layerFrom({
    tracesUrl: `${receiver.url}/v1/traces`,
    metricsUrl: `${receiver.url}/v1/metrics`,
    metricExportIntervalMillis: 60_000,
    captureContent
  })

// =============================================================================
// Configuration
// =============================================================================

describe("configuration from the standard variables", () => {
  const settingsOf = (env: Record<string, string>) =>
    Effect.runSync(
      Effect.withConfigProvider(OtlpExport.settingsConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))
    )

  it("exports nothing unless an endpoint is set, or when the SDK is disabled", () => {
    const none = settingsOf({ OTEL_SERVICE_NAME: "x" })
    assert.isUndefined(none.tracesUrl)
    assert.isUndefined(none.metricsUrl)
    assert.isFalse(none.captureContent)
    const disabled = settingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })
    assert.deepStrictEqual([disabled.tracesUrl, disabled.metricsUrl], [undefined, undefined])
  })

  it("appends each signal's path to the general endpoint, and takes a signal's own endpoint as it is", () => {
    const general = settingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })
    assert.deepStrictEqual(
      [general.tracesUrl, general.metricsUrl],
      ["http://collector:4318/v1/traces", "http://collector:4318/v1/metrics"]
    )
    const tracesOnly = settingsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://jaeger:4318/custom" })
    assert.deepStrictEqual([tracesOnly.tracesUrl, tracesOnly.metricsUrl], ["http://jaeger:4318/custom", undefined])
  })

  it("captures content only when the variable says true", () => {
    const on = settingsOf({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "TRUE" })
    const off = settingsOf({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "yes" })
    assert.deepStrictEqual([on.captureContent, off.captureContent], [true, false])
  })
})

// =============================================================================
// A run in this process
// =============================================================================

describe("traces and metrics of a run", () => {
  let session: Session.Session
  let spans: ReadonlyArray<Span>
  let metrics: ReturnType<typeof metricsIn>
  /** The metrics as this process had counted them before the run (other files' runs count in it too). */
  let before: ReturnType<typeof metricsIn>
  let sent: ReadonlyArray<Received>

  beforeAll(async () => {
    const earlier = receiver.received.length
    await Effect.runPromise(Effect.provide(Effect.void, exporting(false)))
    before = metricsIn(receiver.received.slice(earlier))
    const start = receiver.received.length
    session = await Effect.runPromise(
      Effect.gen(function* () {
        const first = yield* Pipeline.research(question, {
          config: { maxSupervisionRounds: 2, maxDirectivesPerRound: 2 }
        })
        // A completed session resumed: a run of its own, linked to the first.
        yield* Pipeline.resume(first.id)
        return first
      }).pipe(Effect.provide(runLayer()), Effect.provide(exporting(false)))
    )
    sent = receiver.received.slice(start)
    spans = spansIn(sent).map((s) => s.span)
    metrics = metricsIn(sent)
  }, 120_000)

  /** What the run added to each data point of a cumulative metric: the points it changed. */
  const grown = (name: string) => {
    const then = new Map(lastPoints(before, name).map((point) => [JSON.stringify(point.attributes), point]))
    return lastPoints(metrics, name).flatMap((point) => {
      const earlier = then.get(JSON.stringify(point.attributes))
      const value = point.value - (earlier?.value ?? 0)
      const sum = point.sum === undefined ? undefined : point.sum - (earlier?.sum ?? 0)
      return value === 0 ? [] : [{ attributes: point.attributes, value, sum }]
    })
  }

  const byId = () => new Map(spans.map((span) => [span.spanId, span]))
  const ancestors = (span: Span): ReadonlyArray<Span> => {
    const index = byId()
    const chain: Array<Span> = []
    let parent = span.parentSpanId === undefined || span.parentSpanId === "" ? undefined : index.get(span.parentSpanId)
    while (parent !== undefined) {
      chain.push(parent)
      parent =
        parent.parentSpanId === undefined || parent.parentSpanId === "" ? undefined : index.get(parent.parentSpanId)
    }
    return chain
  }
  const sessionRoot = () => {
    return single(
      spans.filter((span) => span.name === "Pipeline.research"),
      "session root span"
    )
  }
  const chatSpans = () => spans.filter((span) => attributesOf(span.attributes)[ATTR_GEN_AI_OPERATION_NAME] === "chat")

  it("arrives as OTLP JSON at the standard paths", () => {
    assert.isAbove(spans.length, 0)
    assert.isAbove(metrics.length, 0)
    for (const request of sent) assert.include(request.contentType, "application/json")
  })

  it("puts the whole session in one trace under one root span: session > phases > rounds > units > calls", () => {
    const root = sessionRoot()
    assert.strictEqual(attributesOf(root.attributes)["deep_research.session.id"], session.id)
    const first = spans.filter((span) => span.traceId === root.traceId)
    const phases = first.filter((span) => span.name.startsWith("phase "))
    assert.includeMembers(
      phases.map((span) => span.name),
      ["phase brief", "phase supervision", "phase synthesis"]
    )
    for (const phase of phases) assert.strictEqual(phase.parentSpanId, root.spanId)
    // Every span of the trace hangs from the root.
    for (const span of first.filter((span) => span !== root)) {
      assert.include(
        ancestors(span).map((a) => a.spanId),
        root.spanId,
        span.name
      )
    }
    const rounds = first.filter((span) => span.name.startsWith("round "))
    assert.isAbove(rounds.length, 0)
    for (const round of rounds)
      assert.include(
        ancestors(round).map((a) => a.name),
        "phase supervision"
      )
    const units = first.filter((span) => span.name === "ResearchUnit.run")
    assert.isAbove(units.length, 0)
    for (const unit of units) assert.match(ancestors(unit)[0]?.name ?? "", /^round \d+$/)
    const researcherCalls = chatSpans().filter(
      (span) => attributesOf(span.attributes)["deep_research.role"] === "researcher"
    )
    assert.isAbove(researcherCalls.length, 0)
    for (const call of researcherCalls)
      assert.include(
        ancestors(call).map((a) => a.name),
        "ResearchUnit.run"
      )
    const searches = first.filter((span) => span.name === "search tavily")
    assert.isAbove(searches.length, 0)
    for (const search of searches) {
      const chain = ancestors(search).map((a) => a.name)
      assert.include(chain, "ResearchUnit.run")
      assert.isTrue(chain.some((name) => name.startsWith("execute_tool ")))
    }
  })

  it("sets the GenAI conventions, the role, the session and the cost on every model call", () => {
    const calls = chatSpans()
    assert.isAbove(calls.length, 0)
    for (const call of calls) {
      const attributes = attributesOf(call.attributes)
      assert.strictEqual(attributes[ATTR_GEN_AI_PROVIDER_NAME], "openai")
      assert.strictEqual(attributes[ATTR_GEN_AI_SYSTEM], "openai")
      assert.isString(attributes[ATTR_GEN_AI_REQUEST_MODEL])
      assert.isString(attributes[ATTR_GEN_AI_RESPONSE_MODEL])
      assert.isNumber(attributes[ATTR_GEN_AI_USAGE_INPUT_TOKENS])
      assert.isNumber(attributes[ATTR_GEN_AI_USAGE_OUTPUT_TOKENS])
      assert.includeMembers(
        ["stop", "length", "tool_calls", "content_filter", "other"],
        [
          ...(Array.isArray(attributes[ATTR_GEN_AI_RESPONSE_FINISH_REASONS])
            ? attributes[ATTR_GEN_AI_RESPONSE_FINISH_REASONS]
            : [undefined])
        ]
      )
      assert.strictEqual(attributes["deep_research.session.id"], session.id)
      assert.isNumber(attributes["deep_research.cost_usd"])
      assert.strictEqual(call.name, `chat ${String(attributes[ATTR_GEN_AI_REQUEST_MODEL])}`)
    }
  })

  it("reports, per role, the calls and tokens the session recorded", () => {
    const first = sessionRoot().traceId
    const calls = chatSpans().filter((span) => span.traceId === first)
    for (const usage of session.usage) {
      const ofRole = calls
        .map((span) => attributesOf(span.attributes))
        .filter((a) => a["deep_research.role"] === usage.role)
      assert.strictEqual(ofRole.length, usage.calls, usage.role)
      const sum = (key: string) => ofRole.reduce((n, a) => n + Number(a[key]), 0)
      assert.strictEqual(sum(ATTR_GEN_AI_USAGE_INPUT_TOKENS), usage.inputTokens, usage.role)
      assert.strictEqual(sum(ATTR_GEN_AI_USAGE_OUTPUT_TOKENS), usage.outputTokens, usage.role)
      assert.closeTo(sum("deep_research.cost_usd"), usage.costUsd, 1e-9, usage.role)
    }
    assert.strictEqual(
      calls.length,
      session.usage.reduce((n, u) => n + u.calls, 0)
    )
  })

  it("counts tokens and cost by role and model, requests by provider, sessions by outcome, and units in flight", () => {
    const tokens = grown("deep_research.tokens")
    for (const usage of session.usage) {
      const of = (type: string) =>
        tokens
          .filter(
            (p) => p.attributes["deep_research.role"] === usage.role && p.attributes["gen_ai.token.type"] === type
          )
          .reduce((n, p) => n + p.value, 0)
      assert.strictEqual(of("input"), usage.inputTokens, usage.role)
      assert.strictEqual(of("output"), usage.outputTokens, usage.role)
    }
    for (const point of tokens) assert.isString(point.attributes[ATTR_GEN_AI_REQUEST_MODEL])
    // The conventions' own histograms, for dashboards built on them.
    const usage = grown(METRIC_GEN_AI_CLIENT_TOKEN_USAGE)
    const totalOf = (type: string) =>
      usage.filter((p) => p.attributes["gen_ai.token.type"] === type).reduce((n, p) => n + (p.sum ?? 0), 0)
    assert.strictEqual(
      totalOf("input"),
      session.usage.reduce((n, u) => n + u.inputTokens, 0)
    )
    assert.strictEqual(
      grown(METRIC_GEN_AI_CLIENT_OPERATION_DURATION).reduce((n, p) => n + p.value, 0),
      chatSpans().length
    )
    const requests = grown("deep_research.requests")
    const modelRequests = requests
      .filter(
        (p) =>
          p.attributes["deep_research.request.kind"] === "model" && p.attributes[ATTR_GEN_AI_PROVIDER_NAME] === "openai"
      )
      .reduce((n, p) => n + p.value, 0)
    assert.strictEqual(modelRequests, chatSpans().length)
    assert.isAbove(
      requests.filter((p) => p.attributes["deep_research.request.kind"] === "search").reduce((n, p) => n + p.value, 0),
      0
    )
    assert.isAbove(grown("deep_research.request.duration").length, 0)
    assert.deepStrictEqual(
      grown("deep_research.sessions").map((p) => [p.attributes["deep_research.session.outcome"], p.value]),
      [["completed", 2]]
    )
    // Every unit that started has ended.
    assert.deepStrictEqual(
      lastPoints(metrics, "deep_research.research_units.active").map((p) => p.value),
      [0]
    )
  })

  it("links the resumed run to the trace of the run it continues", () => {
    const root = sessionRoot()
    const resumed = single(
      spans.filter((span) => span.name === "Pipeline.resume"),
      "resumed run"
    )
    assert.notStrictEqual(resumed.traceId, root.traceId)
    assert.deepStrictEqual(
      resumed.links.map((link) => [link.traceId, link.spanId]),
      [[root.traceId, root.spanId]]
    )
  })

  it("exports no key, prompt or page text when content capture is off", () => {
    for (const request of sent) {
      assert.notInclude(request.body, secret)
      assert.notInclude(request.body, searchSecret)
      assert.notInclude(request.body, question)
    }
    for (const span of spans) {
      const attributes = attributesOf(span.attributes)
      assert.notProperty(attributes, ATTR_GEN_AI_INPUT_MESSAGES)
      assert.notProperty(attributes, ATTR_GEN_AI_OUTPUT_MESSAGES)
    }
  })
})

// =============================================================================
// Content capture
// =============================================================================

describe("content capture", () => {
  it("puts the messages on model spans only when it is on", async () => {
    const call = Effect.gen(function* () {
      yield* ModelRouter.generate("report", { system: "Be brief.", messages: [LanguageModel.user("secret question")] })
    })
    const router = ScriptedModel.layerRouter({ default: { script: ["an answer"] } })
    const before = receiver.received.length
    await Effect.runPromise(call.pipe(Effect.provide(router), Effect.provide(exporting(true))))
    await Effect.runPromise(call.pipe(Effect.provide(router), Effect.provide(exporting(false))))
    const [captured, plain] = spansIn(receiver.received.slice(before)).map((s) => attributesOf(s.span.attributes))
    assert.include(String(captured?.[ATTR_GEN_AI_INPUT_MESSAGES]), "secret question")
    assert.include(String(captured?.[ATTR_GEN_AI_OUTPUT_MESSAGES]), "an answer")
    assert.isDefined(plain)
    assert.notProperty(plain, ATTR_GEN_AI_INPUT_MESSAGES)
  })
})

// =============================================================================
// The host of `serve` and the MCP server
// =============================================================================

describe("the runs of serve and the MCP server", () => {
  it("export each run's spans through the program's exporters, one trace per session", async () => {
    const store = fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-telemetry-"))
    try {
      const resolved = Either.getOrThrow(CliConfig.resolve({ simulate: true, store }, {}, undefined))
      const before = receiver.received.length
      const ids = await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const runs = yield* Runs.make(resolved)
            const started = yield* Effect.forEach(["How do tides work?", "Why is the sky blue?"], (question) =>
              runs.start(question, { allowClarification: false }, "proceed")
            )
            yield* Effect.forEach(started, (run) => runs.awaitRun(run.sessionId))
            return started.map((run) => run.sessionId)
          })
        ).pipe(Effect.provide(exporting(false)))
      )
      const roots = spansIn(receiver.received.slice(before)).filter((s) => s.span.name === "Pipeline.research")
      assert.sameMembers(
        roots.map((s) => attributesOf(s.span.attributes)["deep_research.session.id"]),
        ids
      )
      assert.lengthOf(new Set(roots.map((s) => s.span.traceId)), 2)
    } finally {
      fs.rmSync(store, { recursive: true, force: true })
    }
  }, 60_000)
})

// =============================================================================
// Resilience on spans
// =============================================================================

describe("retries, rate-limit waits and breaker rejections", () => {
  const eventsOfCalls = async (
    script: ReadonlyArray<ScriptedModel.Reply>,
    overrides: typeof Resilience.PolicyOverrides.Encoded,
    calls: number
  ) => {
    const before = receiver.received.length
    const call = Effect.either(ModelRouter.generate("report", { messages: [LanguageModel.user("q")] }))
    await Effect.runPromise(
      Effect.replicateEffect(call, calls).pipe(
        Effect.provide(ScriptedModel.layerRouter({ default: { script } })),
        Effect.provide(Resilience.layer(Schema.decodeSync(Resilience.Settings)({ model: overrides }))),
        Effect.provide(exporting(false))
      )
    )
    return spansIn(receiver.received.slice(before)).map((s) => ({
      events: s.span.events.map((event) => event.name),
      attributes: attributesOf(s.span.attributes)
    }))
  }

  it("shows a retry and the wait for the rate limiter as events of the model call", async () => {
    const spans = await eventsOfCalls(
      [new Errors.ProviderRateLimited({ provider: "scripted" }), "ok"],
      { retryBaseDelay: 1, jitter: false, requestsPerSecond: 2, burst: 1, adaptiveRate: false },
      1
    )
    const call = single(spans, "model call")
    assert.includeMembers(call.events, ["retry", "rate_limit.wait"])
    assert.isUndefined(call.attributes["error.type"])
  })

  it("shows a circuit breaker's rejection as an event, and the error kind on the span", async () => {
    const spans = await eventsOfCalls(
      [new Errors.ProviderUnavailable({ provider: "scripted" })],
      { maxRetries: 0, failureThreshold: 1, resetTimeout: 60_000 },
      2
    )
    assert.lengthOf(spans, 2)
    assert.deepStrictEqual(
      spans.map((span) => span.attributes["error.type"]),
      ["ProviderUnavailable", "ProviderCircuitOpen"]
    )
    assert.include(spans[1]?.events ?? [], "circuit_breaker.rejected")
  })
})

// =============================================================================
// The CLI
// =============================================================================

describe("the CLI with OTEL_EXPORTER_OTLP_ENDPOINT set", () => {
  it("exports the run's spans and metrics under OTEL_SERVICE_NAME before it exits, without its key", async () => {
    const before = receiver.received.length
    const box = BuiltCli.sandbox({
      OPENAI_BASE_URL: emulator.baseUrl("openai"),
      OPENAI_API_KEY: secret,
      TAVILY_BASE_URL: emulator.baseUrl("tavily"),
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: "deep-research-under-test",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test"
    })
    try {
      const finished = await InProcess.run(
        ["--json", "--model", "openai:emulated-model", "--search", "tavily", "--no-clarify", question],
        { cwd: box.dir, env: box.env }
      )
      assert.strictEqual(finished.code, 0, finished.stderr.slice(-2000))
      const sent = receiver.received.slice(before)
      const spans = spansIn(sent)
      const root = single(
        spans.filter((s) => s.span.name === "Pipeline.research"),
        "session root span"
      )
      assert.strictEqual(root.resource["service.name"], "deep-research-under-test")
      assert.strictEqual(root.resource["deployment.environment.name"], "test")
      assert.isAbove(spans.filter((s) => s.span.traceId === root.span.traceId).length, 10)
      assert.isAbove(lastPoints(metricsIn(sent), "deep_research.tokens").length, 0)
      for (const request of sent) assert.notInclude(request.body, secret)
    } finally {
      fs.rmSync(box.dir, { recursive: true, force: true })
    }
  }, 120_000)
})
