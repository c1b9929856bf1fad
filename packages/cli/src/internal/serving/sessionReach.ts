/**
 * The rule of who reaches a session, where sessions have owners: a session no one owns is everyone's, one with an owner
 * is its owner's alone. A session's owner is the caller that started it on a server that tells its callers apart,
 * stored beside it (the artefact `caller.json`), so every process that opens the store knows it. The rule holds for a
 * caller's requests (`sessionOwners.ts`) and for what a run takes from the library (`runReach`, which every process
 * that runs sessions puts into their runtime: one, `serve`, a cluster's worker).
 */
import type { SessionStore, SourceLibrary } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as crypto from "node:crypto"

/** The artefact that names the caller a session belongs to. */
export const ownerArtefact = "caller.json"

const Owner = Schema.parseJson(Schema.Struct({ caller: Schema.String }))

/** The text of a session's owner artefact. */
export const encodeOwner = (caller: string): string => Schema.encodeSync(Owner)({ caller })

const same = (a: string, b: string): boolean =>
  a.length === b.length && crypto.timingSafeEqual(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))

/**
 * The rule of who reaches a session, for a caller's requests and for a run's library alike: a session no one owns is
 * everyone's, one with an owner is its owner's alone. `owner` is the caller asking, or the owner of the session whose
 * run searches the library: none for a session no one owns, which thus reaches only no one's (so that a report anyone
 * may read carries no caller's private sources).
 */
export const reachesOwned = (owner: Option.Option<string>, sessionOwner: Option.Option<string>): boolean =>
  Option.match(sessionOwner, {
    onNone: () => true,
    onSome: (bound) => Option.exists(owner, (caller) => same(bound, caller))
  })

/** How the owners are read: a session's artefact by its name. */
type Artefacts = (sessionId: string, name: string) => Effect.Effect<Option.Option<string>, unknown>

/** The caller an owner artefact names; none for a text that names none. */
export const ownerIn = (text: string): Option.Option<string> =>
  Option.map(Option.getRight(Schema.decodeEither(Owner)(text)), ({ caller }) => caller)

/** The caller stored beside a session (its `caller.json`); none for no one's. */
export const storedOwner = (artefact: Artefacts, sessionId: string): Effect.Effect<Option.Option<string>> =>
  artefact(sessionId, ownerArtefact).pipe(
    Effect.map(Option.flatMap(ownerIn)),
    Effect.orElseSucceed(() => Option.none<string>())
  )

/**
 * The owner of each session, read once: every session's `caller.json` in one read where the store has one
 * (`artefactOfEach`), else each session's as it is asked about. A listing or a search asks about many sessions.
 */
export const ownersOf = (
  artefact: Artefacts,
  artefactOfEach: (name: string) => Effect.Effect<Option.Option<ReadonlyMap<string, string>>>
): Effect.Effect<(sessionId: string) => Effect.Effect<Option.Option<string>>> =>
  Effect.map(artefactOfEach(ownerArtefact), (all) =>
    Option.match(all, {
      onNone: () => (sessionId: string) => storedOwner(artefact, sessionId),
      onSome: (owners) => (sessionId: string) => {
        const text = owners.get(sessionId)
        return Effect.succeed(text === undefined ? Option.none<string>() : ownerIn(text))
      }
    })
  )

/** A store's read of an artefact of every session, where it has one (a name it refuses is a defect: ours). */
export const eachArtefact =
  (store: SessionStore.Service) =>
  (name: string): Effect.Effect<Option.Option<ReadonlyMap<string, string>>> =>
    store.artefactOfEach === undefined
      ? Effect.succeed(Option.none())
      : Effect.map(Effect.orDie(store.artefactOfEach(name)), Option.some)

/**
 * What a run may take from the library (`SourceLibrary.RunReach`): the passages of the sessions its own session's owner
 * reaches. The owners are read from the store, which every process of a cluster shares, so a worker keeps a run of
 * one caller's session from another caller's sources as the server that accepted it would.
 */
export const runReach = (store: SessionStore.Service): SourceLibrary.RunReachService => ({
  forSession: (sessionId) =>
    Effect.gen(function* () {
      const owner = yield* storedOwner(store.artefact, sessionId)
      const ownerOf = yield* ownersOf(store.artefact, eachArtefact(store))
      return (other: string) => Effect.map(ownerOf(other), (bound) => reachesOwned(owner, bound))
    })
})
