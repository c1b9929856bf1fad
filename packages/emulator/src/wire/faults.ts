/**
 * Faults played in each vendor's own shape: status, headers and error body with the texts the vendors really send
 * (see the wire-format notes), so that providers are tested against what they will meet.
 */
import { get, getObjects, getString } from "./json.js"
import { isKeylessEndpoint } from "./keyless.js"
import { keylessFault } from "./keylessFaults.js"
import type { Endpoint, Fault, KeylessEndpoint, RecordedRequest, Reply } from "./types.js"

/** What the server does for a fault: answer, never answer, or drop the connection. */
export type FaultAction = Reply | "hang" | "reset"

type Family = "openai" | "anthropic" | "tavily" | "exa" | "semanticScholar" | "web"

/** The endpoints whose faults this module plays (the keyless APIs' are in `keylessFaults.ts`). */
type VendorEndpoint = Exclude<Endpoint, KeylessEndpoint>

const familyOf = (endpoint: VendorEndpoint): Family => {
  switch (endpoint) {
    case "openai.chat":
    case "openai.responses":
    case "openai.models":
    case "perplexity.chat":
      return "openai"
    case "anthropic.messages":
      return "anthropic"
    case "tavily.search":
    case "tavily.extract":
      return "tavily"
    case "exa.search":
    case "exa.contents":
      return "exa"
    case "semanticScholar.search":
      return "semanticScholar"
    case "web.page":
      return "web"
  }
}

let requestCounter = 0
const requestId = (prefix: string): string => `${prefix}${(++requestCounter).toString(36).padStart(12, "0")}`

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => ({
  kind: "json",
  status,
  headers,
  body
})

/** An OpenAI error body. */
export const openaiError = (message: string, type: string, param: string | null, code: string | null) => ({
  error: { message, type, param, code }
})

/** An Anthropic error body, with a request id as the API sends. */
export const anthropicError = (type: string, message: string) => ({
  type: "error",
  error: { type, message },
  request_id: requestId("req_011")
})

const tavilyError = (message: string) => ({ detail: { error: message } })

const exaError = (error: string, tag: string) => ({ requestId: requestId(""), error, tag })

// =============================================================================
// Exact texts
// =============================================================================

/** Texts the vendors send, verbatim where recorded. */
export const texts = {
  openaiContextLength:
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.",
  openaiResponsesContextLength:
    "Your input exceeds the context window of this model. Please adjust your input and try again.",
  openaiRateLimit: (model: string, seconds: number) =>
    `Rate limit reached for ${model} in organization org-emulator on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in ${seconds}s. Visit https://platform.openai.com/account/rate-limits to learn more.`,
  openaiQuota:
    "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
  openaiServerError: "The server had an error while processing your request. Sorry about that!",
  openaiOverloaded:
    "That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists.",
  openaiBadGateway: "Bad gateway.",
  openaiInvalidKey:
    "Incorrect API key provided: sk-emula**********. You can find your API key at https://platform.openai.com/account/api-keys.",
  anthropicPromptTooLong: "prompt is too long: 208310 tokens > 200000 maximum",
  anthropicRateLimit:
    "This request would exceed the rate limit for your organization (emulator) of 20,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.",
  anthropicCreditTooLow:
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
  anthropicOverloaded: "Overloaded",
  anthropicApiError: "Internal server error",
  anthropicInvalidKey: "invalid x-api-key",
  tavilyUnauthorized: "Unauthorized: missing or invalid API key.",
  tavilyRateLimit: "Your request has been blocked due to excessive requests. Please reduce rate of requests.",
  tavilyPlanLimit:
    "This request exceeds your plan's set usage limit. Please upgrade your plan or contact support@tavily.com",
  tavilyPayAsYouGoLimit:
    "This request exceeds the pay-as-you-go limit. You can increase your limit on the Tavily dashboard",
  tavilyServerError: "Internal Server Error",
  semanticScholarRateLimit:
    "Too Many Requests. Please wait and try again or apply for a key for higher rate limits. https://www.semanticscholar.org/product/api#api-key-form"
} as const

// =============================================================================
// Faults
// =============================================================================

const rateLimitHeaders = (family: Family, seconds: number): Record<string, string> => {
  if (family === "openai") {
    return {
      "retry-after": String(seconds),
      "x-ratelimit-limit-requests": "500",
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": `${seconds}s`,
      "x-ratelimit-limit-tokens": "200000",
      "x-ratelimit-remaining-tokens": "199000",
      "x-ratelimit-reset-tokens": "6ms"
    }
  }
  if (family === "anthropic") {
    const reset = new Date(Date.now() + seconds * 1000).toISOString().replace(/\.\d+Z$/, "Z")
    return {
      "retry-after": String(seconds),
      "anthropic-ratelimit-requests-limit": "50",
      "anthropic-ratelimit-requests-remaining": "0",
      "anthropic-ratelimit-requests-reset": reset,
      "anthropic-ratelimit-input-tokens-limit": "20000",
      "anthropic-ratelimit-input-tokens-remaining": "0",
      "anthropic-ratelimit-input-tokens-reset": reset
    }
  }
  return { "retry-after": String(seconds) }
}

const modelOf = (request: RecordedRequest): string => getString(request.body, "model", "gpt-4o")

const firstToolName = (request: RecordedRequest): string => {
  const tool = getObjects(request.body, "tools")[0]
  return getString(get(tool, "function"), "name", getString(tool, "name", "tool"))
}

const malformed = (family: Family): Reply => ({
  kind: "raw",
  status: 200,
  headers: { "content-type": "application/json" },
  body:
    family === "anthropic"
      ? '{"id":"msg_emulator","type":"message","role":"assistant","content":[{"type":"text","text":"cut sho'
      : '{"id":"chatcmpl-emulator","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"cut sho'
})

const invalidToolArguments = (endpoint: VendorEndpoint, request: RecordedRequest): Reply => {
  const name = firstToolName(request)
  switch (endpoint) {
    case "openai.chat":
    case "perplexity.chat":
      return json(200, {
        id: "chatcmpl-emulator-invalid",
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: modelOf(request),
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: null,
              refusal: null,
              tool_calls: [
                { id: "call_invalid_0", type: "function", function: { name, arguments: '{"queries": ["unterminated' } }
              ]
            },
            logprobs: null,
            finish_reason: "tool_calls"
          }
        ],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
      })
    case "openai.responses":
      return json(200, {
        id: "resp_emulator_invalid",
        object: "response",
        created_at: Math.floor(Date.now() / 1000),
        status: "completed",
        model: modelOf(request),
        output: [
          {
            id: "fc_invalid_0",
            type: "function_call",
            status: "completed",
            call_id: "call_invalid_0",
            name,
            arguments: '{"queries": ["unterminated'
          }
        ],
        usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 }
      })
    case "anthropic.messages":
      // Anthropic always sends `input` as an object; what can be wrong is its shape.
      return json(200, {
        id: "msg_emulator_invalid",
        type: "message",
        role: "assistant",
        model: modelOf(request),
        content: [{ type: "tool_use", id: "toolu_invalid_0", name, input: { unexpected: 42 } }],
        stop_reason: "tool_use",
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 5 }
      })
    default:
      return malformed(familyOf(endpoint))
  }
}

/** A rate limit in the family's shape, with the headers that say when to come back. */
const rateLimited = (family: Family, seconds: number, request: RecordedRequest): Reply => {
  const headers = rateLimitHeaders(family, seconds)
  switch (family) {
    case "openai":
      return json(
        429,
        openaiError(texts.openaiRateLimit(modelOf(request), seconds), "requests", null, "rate_limit_exceeded"),
        headers
      )
    case "anthropic":
      return json(429, anthropicError("rate_limit_error", texts.anthropicRateLimit), headers)
    case "tavily":
      return json(429, tavilyError(texts.tavilyRateLimit), headers)
    case "exa":
      return json(429, exaError("Rate limit exceeded", "RATE_LIMIT_EXCEEDED"), headers)
    case "semanticScholar":
      return json(429, { message: texts.semanticScholarRateLimit, code: "429" }, headers)
    case "web":
      return {
        kind: "raw",
        status: 429,
        headers: { ...headers, "content-type": "text/plain" },
        body: "Too Many Requests"
      }
  }
}

/** An exhausted quota or credit balance in the family's shape. */
const quotaExhausted = (family: Family): Reply => {
  switch (family) {
    case "openai":
      return json(429, openaiError(texts.openaiQuota, "insufficient_quota", null, "insufficient_quota"))
    case "anthropic":
      return json(400, anthropicError("invalid_request_error", texts.anthropicCreditTooLow))
    case "tavily":
      return json(432, tavilyError(texts.tavilyPlanLimit))
    case "exa":
      return json(402, exaError("You have exceeded your credits limit", "NO_MORE_CREDITS"))
    case "semanticScholar":
      return json(403, { message: "Forbidden" })
    case "web":
      return { kind: "raw", status: 402, headers: { "content-type": "text/plain" }, body: "Payment Required" }
  }
}

/** A server error of the given status in the family's shape (overloaded, where the vendor says so). */
const serverError = (family: Family, status: number): Reply => {
  switch (family) {
    case "openai":
      return status === 500
        ? json(500, openaiError(texts.openaiServerError, "server_error", null, null))
        : status === 502
          ? json(502, openaiError(texts.openaiBadGateway, "server_error", null, null))
          : json(status, openaiError(texts.openaiOverloaded, "server_error", null, null))
    case "anthropic":
      return status === 529 || status === 503
        ? json(status, anthropicError("overloaded_error", texts.anthropicOverloaded))
        : json(status, anthropicError("api_error", texts.anthropicApiError))
    case "tavily":
      return json(status, tavilyError(texts.tavilyServerError))
    case "exa":
      return json(status, exaError("Internal server error", "INTERNAL_ERROR"))
    case "semanticScholar":
      return json(status, { message: "Internal Server Error" })
    case "web":
      return { kind: "raw", status, headers: { "content-type": "text/plain" }, body: "Internal Server Error" }
  }
}

/** A refused key in the family's shape. */
const unauthorized = (family: Family): Reply => {
  switch (family) {
    case "openai":
      return json(401, openaiError(texts.openaiInvalidKey, "invalid_request_error", null, "invalid_api_key"))
    case "anthropic":
      return json(401, anthropicError("authentication_error", texts.anthropicInvalidKey), {
        "x-should-retry": "false"
      })
    case "tavily":
      return json(401, tavilyError(texts.tavilyUnauthorized))
    case "exa":
      return json(401, exaError("Invalid API key", "INVALID_API_KEY"))
    case "semanticScholar":
      return json(403, { message: "Forbidden" })
    case "web":
      return { kind: "raw", status: 401, headers: { "content-type": "text/plain" }, body: "Unauthorized" }
  }
}

/** A request too long for the endpoint, worded as that endpoint words it; none for the model list, which takes none. */
const contextTooLong = (endpoint: VendorEndpoint): Reply | undefined => {
  switch (endpoint) {
    case "openai.responses":
      return json(
        400,
        openaiError(texts.openaiResponsesContextLength, "invalid_request_error", "input", "context_length_exceeded")
      )
    case "openai.chat":
    case "perplexity.chat":
      return json(
        400,
        openaiError(texts.openaiContextLength, "invalid_request_error", "messages", "context_length_exceeded")
      )
    case "anthropic.messages":
      return json(400, anthropicError("invalid_request_error", texts.anthropicPromptTooLong))
    case "tavily.search":
    case "tavily.extract":
      return json(400, tavilyError("Query is too long. Max query length is 400 characters."))
    case "exa.search":
    case "exa.contents":
      return json(400, exaError("Request body is too large", "INVALID_REQUEST_BODY"))
    case "semanticScholar.search":
      return json(400, { error: "Query is too long" })
    case "web.page":
      return { kind: "raw", status: 413, headers: { "content-type": "text/plain" }, body: "Payload Too Large" }
    case "openai.models":
      return undefined
  }
}

/** The vendor-shaped answer (or socket action) for a fault at an endpoint. */
export const faultAction = (endpoint: Endpoint, fault: Fault, request: RecordedRequest): FaultAction => {
  if (isKeylessEndpoint(endpoint)) return keylessFault(endpoint, fault, request)
  const family = familyOf(endpoint)
  switch (fault.type) {
    case "hang":
      return "hang"
    case "reset":
      return "reset"
    case "malformed_json":
      return malformed(family)
    case "invalid_tool_arguments":
      return invalidToolArguments(endpoint, request)
    case "rate_limit":
      return rateLimited(family, fault.retryAfterSeconds ?? 1, request)
    case "quota":
      return quotaExhausted(family)
    case "server_error":
      return serverError(family, fault.status)
    case "auth":
      return unauthorized(family)
    case "context_length": {
      const reply = contextTooLong(endpoint)
      if (reply !== undefined) return reply
      break
    }
  }
  return json(500, { error: `the emulator cannot play ${fault.type} at ${endpoint}` })
}
