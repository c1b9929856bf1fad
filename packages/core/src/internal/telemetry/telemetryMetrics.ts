/**
 * The instruments of a run, on Effect's metric registry (exported by the CLI's OpenTelemetry layer): this project's
 * `deep_research.*` counters and histograms, and the GenAI conventions' client histograms.
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"

const latencyBoundaries = MetricBoundaries.exponential({ start: 0.05, factor: 2, count: 14 })

/** Tokens used, by role, model and `gen_ai.token.type` (input or output). */
export const tokens = Metric.counter("deep_research.tokens", {
  description: "Tokens used by model calls",
  incremental: true
})

/** Money spent on model calls (USD), by role and model. */
export const cost = Metric.counter("deep_research.cost", {
  description: "Cost of model calls in USD",
  incremental: true
})

/** Requests to providers, by kind (model, search, extract) and provider. */
export const requests = Metric.counter("deep_research.requests", {
  description: "Requests to model, search and extract providers",
  incremental: true
})

/** Failed requests, by kind, provider and `error.type` (the error's tag). */
export const requestErrors = Metric.counter("deep_research.request.errors", {
  description: "Failed requests to providers, by error kind",
  incremental: true
})

/** The duration of requests in seconds, retries and waits included, by kind and provider. */
export const requestDuration = Metric.histogram(
  "deep_research.request.duration",
  latencyBoundaries,
  "Duration of provider requests in seconds"
)

/** The GenAI conventions' `gen_ai.client.token.usage` histogram, with the buckets they advise. */
export const clientTokenUsage = Metric.histogram(
  "gen_ai.client.token.usage",
  MetricBoundaries.fromIterable([
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864
  ]),
  "Number of input and output tokens used"
)

/** The GenAI conventions' `gen_ai.client.operation.duration` histogram (seconds), with the buckets they advise. */
export const clientOperationDuration = Metric.histogram(
  "gen_ai.client.operation.duration",
  MetricBoundaries.fromIterable([
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92
  ]),
  "GenAI operation duration"
)

/** Sessions that ended, by outcome (completed, awaiting_clarification, failed, cancelled). */
export const sessions = Metric.counter("deep_research.sessions", {
  description: "Research runs ended, by outcome",
  incremental: true
})

/** Research units running now. */
export const researchUnitsActive = Metric.counter("deep_research.research_units.active", {
  description: "Research units in flight"
})

/** `metric` with the given tags (attributes, once exported). */
export const withTags = <Type, In, Out>(
  metric: Metric.Metric<Type, In, Out>,
  tags: Readonly<Record<string, string>>
): Metric.Metric<Type, In, Out> =>
  Metric.taggedWithLabels(
    metric,
    Object.entries(tags).map(([name, value]) => MetricLabel.make(name, value))
  )

/** The instruments a model call that succeeded updates, tagged for its role, provider, model and answering model. */
export interface ModelCallInstruments {
  readonly requests: Metric.Metric.Counter<number>
  readonly requestDuration: Metric.Metric.Histogram<number>
  readonly operationDuration: Metric.Metric.Histogram<number>
  readonly inputTokenUsage: Metric.Metric.Histogram<number>
  readonly outputTokenUsage: Metric.Metric.Histogram<number>
  readonly inputTokens: Metric.Metric.Counter<number>
  readonly outputTokens: Metric.Metric.Counter<number>
  readonly cost: Metric.Metric.Counter<number>
}

/** The instruments of a model call, tagged as `Telemetry.attributes` names them. */
export const modelCallInstruments = (
  role: string,
  provider: string,
  model: string,
  responseModel: string
): ModelCallInstruments => {
  const request = { "deep_research.request.kind": "model", "gen_ai.provider.name": provider }
  const convention = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": provider,
    "gen_ai.request.model": model
  }
  const usage = { ...convention, "gen_ai.response.model": responseModel }
  const byRole = { "deep_research.role": role, "gen_ai.request.model": model }
  return {
    requests: withTags(requests, request),
    requestDuration: withTags(requestDuration, request),
    operationDuration: withTags(clientOperationDuration, convention),
    inputTokenUsage: withTags(clientTokenUsage, { ...usage, "gen_ai.token.type": "input" }),
    outputTokenUsage: withTags(clientTokenUsage, { ...usage, "gen_ai.token.type": "output" }),
    inputTokens: withTags(tokens, { ...byRole, "gen_ai.token.type": "input" }),
    outputTokens: withTags(tokens, { ...byRole, "gen_ai.token.type": "output" }),
    cost: withTags(cost, byRole)
  }
}
