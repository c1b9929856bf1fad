/**
 * Faults of the keyless search APIs, each in the shape its documentation (or its service, where the documentation is
 * silent) gives it: a MediaWiki `ratelimited` error, arXiv's 503 with `Retry-After`, OpenAlex's 429 (a rate with
 * allowance left, or the daily allowance spent, with its `X-RateLimit-*` headers) and 403, NCBI's 429 with its error JSON and its refused API key, a SearXNG instance that
 * refuses the JSON format (403) or whose limiter answers 429.
 */
import { wikipediaError } from "./keyless.js"
import { arxivErrorFeed } from "./keylessPapers.js"
import { pubmedSearchError } from "./keylessPubmed.js"
import type { Fault, KeylessEndpoint, RecordedRequest, Reply } from "./types.js"

const json = (status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): Reply => ({
  kind: "json",
  status,
  headers,
  body
})

const text = (status: number, body: string, contentType = "text/plain; charset=utf-8", headers = {}): Reply => ({
  kind: "raw",
  status,
  headers: { "content-type": contentType, ...headers },
  body
})

const html = (status: number, title: string): Reply =>
  text(
    status,
    `<!DOCTYPE html><html><head><title>${title}</title></head><body><h1>${title}</h1></body></html>`,
    "text/html; charset=utf-8"
  )

const retryAfter = (fault: { readonly retryAfterSeconds?: number | undefined }): Record<string, string> =>
  fault.retryAfterSeconds === undefined ? {} : { "retry-after": String(fault.retryAfterSeconds) }

/** NCBI's answer past its rate limit (the address stands where a key would). */
export const ncbiRateLimit = (limit: number) => ({
  error: "API rate limit exceeded",
  "api-key": "127.0.0.1",
  count: String(limit + 1),
  limit: String(limit)
})

const rateLimit = (
  endpoint: KeylessEndpoint,
  fault: Extract<Fault, { type: "rate_limit" }>,
  request: RecordedRequest
): Reply => {
  switch (endpoint) {
    case "wikipedia.api":
      return wikipediaError(
        "ratelimited",
        "You've exceeded your rate limit. Please wait some time and try again.",
        retryAfter(fault)
      )
    case "arxiv.query":
      // The export API throttles with a 503 that says when to come back.
      return text(503, "Rate exceeded.", "text/plain; charset=utf-8", {
        "retry-after": String(fault.retryAfterSeconds ?? 3)
      })
    case "openalex.works":
      return json(
        429,
        { error: "Rate limit exceeded", message: "Too many requests per second." },
        { "x-ratelimit-limit": "100", "x-ratelimit-remaining": "97", ...retryAfter(fault) }
      )
    case "pubmed.esearch":
    case "pubmed.efetch": {
      const limit = request.query["api_key"] === undefined ? 3 : 10
      return json(429, ncbiRateLimit(limit), {
        "x-ratelimit-limit": String(limit),
        "x-ratelimit-remaining": "0",
        ...retryAfter(fault)
      })
    }
    case "searxng.search":
      return text(429, "Too Many Requests", "text/plain; charset=utf-8", retryAfter(fault))
  }
}

const serverError = (endpoint: KeylessEndpoint, status: number): Reply => {
  switch (endpoint) {
    case "openalex.works":
      return json(status, { error: "Internal Server Error", message: "Temporary issue; retry with backoff." })
    case "wikipedia.api":
      return html(status, "Wikimedia Error")
    default:
      return html(status, status === 503 ? "Service Unavailable" : "Internal Server Error")
  }
}

const auth = (endpoint: KeylessEndpoint): Reply => {
  switch (endpoint) {
    case "pubmed.esearch":
    case "pubmed.efetch":
      return json(400, { error: "API key invalid", "api-key": "0000", type: "invalid", status: "unknown" })
    case "openalex.works":
      return json(401, { error: "Unauthorized", message: "Invalid API key." })
    case "searxng.search":
      return html(403, "403 Forbidden")
    default:
      return html(403, "Forbidden")
  }
}

const refused = (endpoint: KeylessEndpoint): Reply => {
  switch (endpoint) {
    case "wikipedia.api":
      return wikipediaError("toomanyvalues", 'Too many values supplied for parameter "pageids". The limit is 50.')
    case "arxiv.query":
      return arxivErrorFeed("max_results must be <= 30000")
    case "openalex.works":
      return json(400, { error: "Invalid query parameters error.", message: "per_page must be between 1 and 200" })
    case "pubmed.esearch":
    case "pubmed.efetch":
      return pubmedSearchError("Search Backend failed: query too long")
    case "searxng.search":
      return html(400, "Bad Request")
  }
}

const malformed = (endpoint: KeylessEndpoint): Reply =>
  endpoint === "arxiv.query" || endpoint === "pubmed.efetch"
    ? text(
        200,
        '<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">\n  <entry><title>cut sho',
        "application/xml"
      )
    : text(200, '{"query": {"search": [{"title": "cut sho', "application/json")

/** The keyless API's answer (or socket action) for a fault. */
export const keylessFault = (
  endpoint: KeylessEndpoint,
  fault: Fault,
  request: RecordedRequest
): Reply | "hang" | "reset" => {
  switch (fault.type) {
    case "hang":
    case "reset":
      return fault.type
    case "rate_limit":
      return rateLimit(endpoint, fault, request)
    case "quota":
      return endpoint === "openalex.works"
        ? json(
            429,
            { error: "Too Many Requests", message: "Daily limit exceeded: your daily usage allowance is spent." },
            { "x-ratelimit-limit": "100", "x-ratelimit-remaining": "0", "x-ratelimit-credits-used": "100" }
          )
        : rateLimit(endpoint, { type: "rate_limit" }, request)
    case "server_error":
      return serverError(endpoint, fault.status)
    case "auth":
      return auth(endpoint)
    case "context_length":
      return refused(endpoint)
    case "malformed_json":
    case "invalid_tool_arguments":
      return malformed(endpoint)
  }
}
