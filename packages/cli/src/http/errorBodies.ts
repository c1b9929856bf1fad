/**
 * The bodies of the server's error responses as their clients read them: a body that quotes the request only in part,
 * a decoding failure said in a sentence, and, under `/v1`, every error in the shape OpenAI clients read. `Serve`'s
 * guard finishes every response through these.
 */
import * as Secrets from "@deep-research/providers/Secrets"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Schema from "effect/Schema"
import * as DecodeIssues from "../internal/serving/decodeIssues.js"
import { ServiceUnavailable, Unauthorized } from "./Api.js"
import * as OpenAiSchema from "./OpenAiSchema.js"
import * as RequestLimits from "./requestLimits.js"

const decoder = new TextDecoder()

/** A JSON error body of a response, or undefined when it has none. */
const errorBodyOf = (response: HttpServerResponse.HttpServerResponse): object | undefined => {
  if (response.status < 400 || response.body._tag !== "Uint8Array") return undefined
  try {
    const body: unknown = JSON.parse(decoder.decode(response.body.body))
    return typeof body === "object" && body !== null ? body : undefined
  } catch {
    return undefined
  }
}

/** An error response whose body quotes the request only in part; others pass as they are. */
export const withExcerpts = (
  response: HttpServerResponse.HttpServerResponse
): HttpServerResponse.HttpServerResponse => {
  const body = errorBodyOf(response)
  if (body === undefined) return response
  const shortened = RequestLimits.withExcerpts(body)
  return shortened.cut
    ? HttpServerResponse.unsafeJson(shortened.body, { status: response.status, headers: response.headers })
    : response
}

/**
 * A request that did not decode, said in a sentence (`'question' is required.`) rather than as Schema's tree; its
 * `issues` stay as they were, less those that say nothing. Other responses pass as they are.
 */
export const withReadableMessage = (
  response: HttpServerResponse.HttpServerResponse
): HttpServerResponse.HttpServerResponse => {
  const body = errorBodyOf(response)
  if (body === undefined || Reflect.get(body, "_tag") !== "HttpApiDecodeError") return response
  const issues: unknown = Reflect.get(body, "issues")
  const message = DecodeIssues.messageOf(issues)
  if (message === undefined) return response
  return HttpServerResponse.unsafeJson(
    { ...body, issues: DecodeIssues.boundedIssues(DecodeIssues.tellingIssues(issues)), message },
    { status: response.status, headers: response.headers }
  )
}

/**
 * An error of the API (a body that did not decode, a missing token) in the shape OpenAI clients read, for `/v1`:
 * `{error: {message, type, param, code}}`, the field at fault as `param`, with the tag of the error the OpenAPI
 * document gives for its status (`InvalidRequest` for a 400, `Unauthorized`, which keeps its `message`, for a 401), so
 * that the body is what the document describes. Errors already in that shape pass as they are.
 */
export const asOpenAiError = (
  response: HttpServerResponse.HttpServerResponse
): HttpServerResponse.HttpServerResponse => {
  const body = errorBodyOf(response)
  if (body === undefined || "error" in body) return response
  const message: unknown = Reflect.get(body, "message")
  const firstIssue = DecodeIssues.issuesOf(Reflect.get(body, "issues"))[0]
  const param = firstIssue === undefined || firstIssue.path.length === 0 ? null : firstIssue.path.join(".")
  // A field at fault is named as OpenAI names it, with the first thing wrong with it rather than the whole tree.
  const said =
    param === null || firstIssue === undefined
      ? message
      : firstIssue.tag === "Missing"
        ? `Missing required parameter: '${param}'.`
        : `Invalid value for '${param}': ${firstIssue.message}`
  const text = typeof said === "string" ? said : `HTTP ${response.status}`
  // Encoded by the classes the document is made from, so that the body cannot drift from what it describes.
  const answer =
    response.status === 401
      ? encodeUnauthorized(
          new Unauthorized({ message: text, ...OpenAiSchema.openAiError(text, "authentication_error", param) })
        )
      : response.status === 503
        ? encodeServiceUnavailable(
            new ServiceUnavailable({ message: text, ...OpenAiSchema.openAiError(text, "server_error") })
          )
        : encodeInvalidRequest(OpenAiSchema.InvalidRequest.of(text, param))
  return HttpServerResponse.unsafeJson(answer, { status: response.status, headers: response.headers })
}

const encodeUnauthorized = Schema.encodeSync(Unauthorized)
const encodeServiceUnavailable = Schema.encodeSync(ServiceUnavailable)
const encodeInvalidRequest = Schema.encodeSync(OpenAiSchema.InvalidRequest)

/**
 * An error response without the process's secrets: a refusal that quotes what the client sent (a bad field, an
 * unknown id or model) quotes a key or the token as `[redacted]`, since refusals land in proxies' and clients' logs.
 */
export const withoutSecrets = (
  response: HttpServerResponse.HttpServerResponse,
  scrub: (text: string) => string
): HttpServerResponse.HttpServerResponse => {
  const body = errorBodyOf(response)
  if (body === undefined) return response
  const scrubbed = Secrets.scrubValue(scrub)(body)
  return scrubbed === body
    ? response
    : HttpServerResponse.unsafeJson(scrubbed, { status: response.status, headers: response.headers })
}
