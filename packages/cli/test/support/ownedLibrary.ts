/**
 * A library of sessions with owners, for the tests of what a caller's runs and searches take from it: another caller's
 * sessions (Bob's) that match a question far better than the caller's own (Alice's) and no one's, each session stored
 * with its caller's binding (`caller.json`) as a server that tells its callers apart stores it.
 */
import { Session, SessionStore, Source } from "@deep-research/core"
import * as Effect from "effect/Effect"
import type * as CliConfig from "../../src/CliConfig.js"
import * as TaskOwners from "../../src/internal/mcp/taskOwners.js"
import { encodeOwner, ownerArtefact } from "../../src/internal/serving/sessionReach.js"
import * as Store from "../../src/Store.js"

/** Two callers' tokens, of one server. */
export const alice = "a1c3e5a7c9e1a3c5e7a9c1e3a5c7e9a1a1c3e5a7"
export const bob = "b2d4f6b8d0f2b4d6f8b0d2f4b6d8f0b2b2d4f6b8"

/** What the sessions are about. */
export const question = "How fast are alpine glaciers retreating?"

const source = (id: string, url: string, title: string, content: string) =>
  new Source.Source({ id, url, title, content, provider: "static", quality: "medium", retrievedAt: 1, rawLength: 1 })

/** A finished session holding `sources`, stored (in the server's store) with its caller's binding (none: no one's). */
export const seed = (resolved: CliConfig.Resolved, id: string, sources: ReadonlyArray<Source.Source>, token?: string) =>
  Effect.gen(function* () {
    const store = yield* SessionStore.SessionStore
    yield* store.save(
      new Session.Session({
        version: Session.currentVersion,
        id,
        query: question,
        createdAt: 1_700_000_000_000,
        updatedAt: 1_700_000_000_000,
        config: resolved.research,
        status: "completed",
        rounds: [],
        sources,
        metrics: [],
        usage: []
      })
    )
    if (token !== undefined) {
      yield* store.saveArtefact(id, ownerArtefact, encodeOwner(TaskOwners.callerOfToken(token)))
    }
  }).pipe(Effect.provide(Store.storeLayer(resolved.storeDir, resolved.credentials)), Effect.orDie)

/**
 * Bob's sessions (`bob-glaciers-<n>`), about alpine glaciers retreating through and through (they outrank everything
 * else); Alice's (`alice-farms`) and no one's (`shared-farms`), each mentioning them once in a page about something
 * else. Their pages' URLs are at `bob.example`, `alice.example` and `shared.example`.
 */
export const seedLibrary = (resolved: CliConfig.Resolved) =>
  Effect.gen(function* () {
    for (let n = 0; n < 3; n++) {
      const pages = Array.from({ length: 12 }, (_, i) =>
        source(
          `r1-s${i}`,
          `https://bob.example/${n}/${i}`,
          "Alpine glaciers retreating fast",
          "Alpine glaciers are retreating fast: glaciers retreating, alpine glaciers melting. ".repeat(6)
        )
      )
      yield* seed(resolved, `bob-glaciers-${n}`, pages, bob)
    }
    const weak = (site: string, i: number) =>
      source(
        `r1-s${i}`,
        `https://${site}.example/${i}`,
        `Mountain farming ${i}`,
        `Farms of the high valleys keep cattle in summer pastures; above them an alpine glacier lies (note ${i}).`
      )
    yield* seed(resolved, "alice-farms", [weak("alice", 1), weak("alice", 2)], alice)
    yield* seed(resolved, "shared-farms", [weak("shared", 1), weak("shared", 2)])
  })

/** The sessions a session's sources came from in the library. */
export const originsOf = (session: Session.Session): ReadonlySet<string> =>
  new Set(session.sources.flatMap((source) => (source.origin === undefined ? [] : [source.origin.sessionId])))

/** A session as the server's store holds it. */
export const stored = (resolved: CliConfig.Resolved, id: string) =>
  Effect.flatMap(SessionStore.SessionStore, (store) => store.load(id)).pipe(
    Effect.provide(Store.storeLayer(resolved.storeDir, resolved.credentials)),
    Effect.orDie
  )
