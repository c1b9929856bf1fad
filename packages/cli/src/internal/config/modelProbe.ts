/**
 * One quick request to each model server a run will use, before a session is made: a local model that is not
 * running (Ollama not started, `OPENAI_BASE_URL` at a dead port) is said at once, with the address tried and the
 * usual cause, instead of after a phase of retries and a paused circuit breaker, and without a failed session left
 * in the store. Any HTTP answer counts as an answer (a 401 or a 404 is a server that is there); only a connection
 * that fails or a silence does not.
 */
import * as Effect from "effect/Effect"
import type * as CliConfig from "../../CliConfig.js"

/** A model server a run will call: which provider, at which address, and what to check when it does not answer. */
export interface Endpoint {
  readonly provider: "openai" | "anthropic" | "ollama"
  readonly spec: string
  readonly baseUrl: string
  readonly hint: string
}

/** How long the probe waits for an answer. */
export const probeTimeoutMillis = 3_000

const providerOf = (spec: string): Endpoint["provider"] | undefined => {
  const provider = spec.slice(0, spec.indexOf(":"))
  return provider === "openai" || provider === "anthropic" || provider === "ollama" ? provider : undefined
}

/** The distinct servers of the models a run uses (the default model, and those of roles and tiers). */
export const endpointsOf = (resolved: Pick<CliConfig.Resolved, "models" | "credentials">): ReadonlyArray<Endpoint> => {
  const c = resolved.credentials
  const specs = [
    resolved.models.default,
    ...Object.values(resolved.models.roles),
    ...Object.values(resolved.models.tiers)
  ]
  const endpoints = new Map<string, Endpoint>()
  for (const spec of specs) {
    if (spec === undefined) continue
    const provider = providerOf(spec)
    const endpoint: Endpoint | undefined =
      provider === "ollama"
        ? {
            provider,
            spec,
            baseUrl: c.ollamaBaseUrl ?? "http://localhost:11434/v1",
            hint:
              "Is Ollama running? Start it with `ollama serve` (or the Ollama app), or set OLLAMA_BASE_URL to where " +
              "it listens."
          }
        : provider === "openai"
          ? c.openaiBaseUrl !== undefined
            ? {
                provider,
                spec,
                baseUrl: c.openaiBaseUrl,
                hint:
                  "Is the server OPENAI_BASE_URL names running, and is the address right (an OpenAI-compatible " +
                  "server's usually ends in /v1)?"
              }
            : {
                provider,
                spec,
                baseUrl: "https://api.openai.com/v1",
                hint: "Check the network connection (and a proxy, if you use one)."
              }
          : provider === "anthropic"
            ? {
                provider,
                spec,
                baseUrl: c.anthropicBaseUrl ?? "https://api.anthropic.com",
                hint:
                  c.anthropicBaseUrl === undefined
                    ? "Check the network connection (and a proxy, if you use one)."
                    : "Is the server ANTHROPIC_BASE_URL names running, and is the address right?"
              }
            : undefined
    if (endpoint !== undefined && !endpoints.has(endpoint.baseUrl)) endpoints.set(endpoint.baseUrl, endpoint)
  }
  return [...endpoints.values()]
}

const causeOf = (error: unknown): string => {
  const cause: unknown = error instanceof Error && "cause" in error ? error.cause : error
  const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""
  if (code === "ECONNREFUSED") return "the connection was refused (nothing listens there)"
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "its host name does not resolve"
  if (code === "ECONNRESET") return "the connection was reset"
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH") return "the network cannot reach it"
  return cause instanceof Error ? cause.message : String(cause)
}

/** Why the server at an endpoint did not answer, or undefined when it answered anything at all. */
export const probe = (endpoint: Endpoint): Effect.Effect<string | undefined> =>
  Effect.tryPromise({
    try: async (signal) => {
      const base = endpoint.baseUrl.replace(/\/+$/, "")
      const response = await fetch(endpoint.provider === "anthropic" ? `${base}/v1/models` : `${base}/models`, {
        signal
      })
      await response.body?.cancel()
    },
    catch: causeOf
  }).pipe(
    Effect.timeoutFail({
      duration: probeTimeoutMillis,
      onTimeout: () => `it did not answer within ${probeTimeoutMillis / 1000} s`
    }),
    Effect.as(undefined),
    Effect.catchAll((reason) => Effect.succeed(reason))
  )

/**
 * Probes the servers of a run's models, all at once; the message for the first that does not answer (its address,
 * why, and the usual cause), or undefined when every one answered.
 */
export const unreachable = (
  resolved: Pick<CliConfig.Resolved, "models" | "credentials">
): Effect.Effect<string | undefined> =>
  Effect.map(
    Effect.forEach(
      endpointsOf(resolved),
      (endpoint) => Effect.map(probe(endpoint), (reason) => ({ endpoint, reason })),
      {
        concurrency: "unbounded"
      }
    ),
    (probed) => {
      const failed = probed.find((p) => p.reason !== undefined)
      return failed === undefined
        ? undefined
        : `Cannot reach the model server of ${failed.endpoint.spec} at ${failed.endpoint.baseUrl}: ${failed.reason}.\n` +
            failed.endpoint.hint
    }
  )
