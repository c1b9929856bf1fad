/**
 * Who a request of `deep-research serve` is: the server's tokens (`DEEP_RESEARCH_API_TOKEN`, one, or several separated
 * by commas, one for each caller), the bearer check of `/api` and `/v1`, the caller a request is (`TaskOwners`), and
 * the runs as that caller reaches them (`SessionOwners`: where the server tells its callers apart, its own sessions and
 * no one's).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as crypto from "node:crypto"
import type * as Runs from "../Runs.js"
import * as TaskOwners from "../internal/mcp/taskOwners.js"
import { Authorization, Unauthorized } from "./ApiErrors.js"

// =============================================================================
// Authorization
// =============================================================================

const digest = (text: string): Buffer => crypto.createHash("sha256").update(text, "utf8").digest()

/** Whether a presented token is the expected one, in time that does not depend on where they differ. */
export const tokenMatches = (presented: string, expected: string): boolean =>
  // Digests have the same length whatever the tokens', as `timingSafeEqual` needs; the length is not leaked either.
  crypto.timingSafeEqual(digest(presented), digest(expected)) && presented.length > 0

/**
 * The tokens a server takes: `DEEP_RESEARCH_API_TOKEN` holds one, or several separated by commas, one for each caller
 * (the server then tells its callers apart: an MCP task is reached only with the token that started it).
 */
export const tokensOf = (token: Redacted.Redacted<string>): ReadonlyArray<string> =>
  Redacted.value(token)
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")

/** Whether a presented token is one of the server's, each compared in constant time, all of them every time. */
export const accepts = (presented: string, token: Redacted.Redacted<string>): boolean =>
  tokensOf(token)
    .map((expected) => tokenMatches(presented, expected))
    .reduce((found, matches) => found || matches, false)

/** What a request without the token is told. */
export const tokenNeeded = "This server needs its API token: Authorization: Bearer <token>"

/** What a request is told whose token is not the server's: one without any, or one with another (never quoted). */
export const tokenRefused = (presented: string): string =>
  presented === ""
    ? tokenNeeded
    : "The API token sent is not this server's: send the one it was given (DEEP_RESEARCH_API_TOKEN) as " +
      "Authorization: Bearer <token>"

/** RFC 6750's challenge with the refusal: `invalid_token` when a token was sent. */
export const challengeOf = (presented: string): string => (presented === "" ? "Bearer" : 'Bearer error="invalid_token"')

/** The bearer check: with no token configured (a loopback server) every request passes. */
export const authorizationLayer = (token: Redacted.Redacted<string> | undefined): Layer.Layer<Authorization> =>
  Layer.succeed(
    Authorization,
    Authorization.of({
      bearer: (presented) =>
        token === undefined || accepts(Redacted.value(presented), token)
          ? Effect.void
          : Effect.fail(new Unauthorized({ message: tokenRefused(Redacted.value(presented)) }))
    })
  )

/** The token of an `Authorization: Bearer <token>` header, if it holds one. */
export const bearerOf = (header: string | undefined): string | undefined =>
  /^Bearer\s+(\S+)\s*$/i.exec(header ?? "")?.[1]

/**
 * The caller a request is (`TaskOwners`): on a server with a token, the token it presents, if it is the server's; on
 * one without, `anyone`. Undefined for a request without the token.
 */
export const callerOf = (
  header: string | undefined,
  token: Redacted.Redacted<string> | undefined
): string | undefined => {
  if (token === undefined) return TaskOwners.anyone
  const presented = bearerOf(header)
  return presented !== undefined && accepts(presented, token) ? TaskOwners.callerOfToken(presented) : undefined
}

/** Whether a server with this token tells its callers apart: it holds several tokens, one for each caller. */
export const tellsCallersApart = (token: Redacted.Redacted<string> | undefined): boolean =>
  token !== undefined && tokensOf(token).length > 1

// =============================================================================
// The runs as a caller reaches them
// =============================================================================

/** The runs as a request's caller reaches them (`SessionOwners`), from its Authorization header. */
export type RunsOf = (authorization: string | undefined) => Runs.Runs

/** The runs for each request of a server with this token, from the runs for each caller (`SessionOwners.forCallers`). */
export const runsOfRequests =
  (reach: (caller: string | undefined) => Runs.Runs, token: Redacted.Redacted<string> | undefined): RunsOf =>
  (authorization) =>
    reach(callerOf(authorization, token))
