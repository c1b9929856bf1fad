/**
 * The errors of the HTTP API of `deep-research serve` (each its status and its body), and the bearer token check that
 * every group but health sits behind (`Api.ts` declares the groups).
 */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as Schema from "effect/Schema"
import * as OpenAiSchema from "./OpenAiSchema.js"

/** The request names no session this server knows. */
export class NotFound extends Schema.TaggedError<NotFound>()(
  "NotFound",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/** The request is well formed but its values cannot be used (an id with a slash, a setting out of range). */
export class BadRequest extends Schema.TaggedError<BadRequest>()(
  "BadRequest",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 400 })
) {}

/** The session's state does not allow this now (answering a running session, cancelling a finished one). */
export class Conflict extends Schema.TaggedError<Conflict>()(
  "Conflict",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/** The research failed, or the store could not read the session. */
export class ServerError extends Schema.TaggedError<ServerError>()(
  "ServerError",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 500 })
) {}

/** No bearer token, or not the configured one. Under `/v1`, said again in the shape OpenAI clients read (`error`). */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  { message: Schema.String, error: Schema.optional(OpenAiSchema.ErrorBody) },
  HttpApiSchema.annotations({ status: 401 })
) {}

/**
 * What the server depends on is out (the database of `serve --database`, or a judge model it was not given): which,
 * and why, in the sentence the CLI says too. Under `/v1`, said again in the shape OpenAI clients read (`error`).
 */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()(
  "ServiceUnavailable",
  { message: Schema.String, error: Schema.optional(OpenAiSchema.ErrorBody) },
  HttpApiSchema.annotations({ status: 503 })
) {}

/** The bearer token check; it passes every request when the server has no token (loopback only). */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("@deep-research/cli/Authorization", {
  failure: Unauthorized,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

// =============================================================================
// Schemas
// =============================================================================
