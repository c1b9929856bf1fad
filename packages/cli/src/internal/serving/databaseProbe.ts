/**
 * Whether the database of a serving process (`serve --database`, `mcp --database`) answers now. Asked by health, and
 * when a request has failed, so that an outage is said as one: the sentence of `DatabaseUnavailable`, the one the CLI
 * says when it cannot reach the database (the address without its password, and the driver's reason), never a bare
 * 500 or a stack trace. Each check is a fresh connection (the pool of the store would answer from its own state);
 * requests asking at the same moment share one, and an outage found is kept a moment.
 */
import type * as SqlSessionStore from "@deep-research/providers/SqlSessionStore"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"

/** The database of a serving process, asked whether it answers. */
export interface Probe {
  /** Why the database cannot be used now, or undefined when it answers. */
  readonly check: Effect.Effect<SqlSessionStore.DatabaseUnavailable | undefined>
}

/** How long a check waits for the database to answer before it says it does not. */
const checkTimeout = "3 seconds"

/** An outage found is told to the requests that ask within this time, without a connection each. */
const outageKeptFor = "1 second"

/** A probe of the database at `url`. */
export const make = (url: Redacted.Redacted<string>): Effect.Effect<Probe> =>
  Effect.gen(function* () {
    const Store = yield* Effect.promise(() => import("@deep-research/providers/SqlSessionStore"))
    const connect = Store.pgClientLayer(url, { connectTimeout: checkTimeout, maxConnections: 1 })
    const check = Effect.scoped(Layer.build(connect)).pipe(
      Effect.as(undefined),
      Effect.catchAll((unavailable) => Effect.succeed(unavailable))
    )
    const [shared, forget] = yield* Effect.cachedInvalidateWithTTL(check, outageKeptFor)
    // A database that answered is asked again by the next request (it may be gone by then); the requests waiting on
    // the same check share its answer.
    return { check: Effect.tap(shared, (unavailable) => (unavailable === undefined ? forget : Effect.void)) }
  })

/** A probe when the configuration names a database, else none (the file store has no outage to tell). */
export const forDatabase = (url: Redacted.Redacted<string> | undefined): Effect.Effect<Probe | undefined> =>
  url === undefined ? Effect.succeed(undefined) : make(url)

/**
 * `effect`, whose failures (defects too) are said as the outage when the database does not answer then; with the
 * database up, or without a probe, they stay as they were.
 */
export const sayingOutage =
  (probe: Probe | undefined) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlSessionStore.DatabaseUnavailable, R> =>
    probe === undefined
      ? effect
      : Effect.catchAllCause(effect, (cause): Effect.Effect<never, E | SqlSessionStore.DatabaseUnavailable> =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause)
            : Effect.flatMap(
                probe.check,
                (unavailable): Effect.Effect<never, E | SqlSessionStore.DatabaseUnavailable> =>
                  unavailable === undefined ? Effect.failCause(cause) : Effect.fail(unavailable)
              )
        )
