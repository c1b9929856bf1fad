/**
 * One session brought into the store from elsewhere (the earlier file store's folder, another store's database), the
 * same way whatever it comes from: held while it is, left alone when the store holds it already, and stored whole
 * through the store's own operations (so that its sources enter the library).
 */
import * as ResearchEvents from "@deep-research/core/ResearchEvents"
import type * as SessionStore from "@deep-research/core/SessionStore"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { decodeStored } from "../sessionMigrations.js"

/** What is found of a session where it comes from: its checkpoint's text and what was kept beside it. */
export interface Found {
  /** Where the checkpoint was read, for the reason it cannot be read ("its session.json", "its row"). */
  readonly from: string
  readonly text: string
  /** Its event log, a JSON text an event; an unreadable one is left out, as reading it there left it out. */
  readonly events: ReadonlyArray<string>
  readonly report: string | undefined
  readonly artefacts: ReadonlyArray<readonly [name: string, content: string]>
}

/**
 * Brings the session `find` reads into the store: its status, or undefined when the store holds it already (or
 * another process is bringing it in, holding it). Fails with why the session cannot be read.
 */
export const importSession = (
  store: SessionStore.Service,
  id: string,
  find: Effect.Effect<Found, string>
): Effect.Effect<string | undefined, string> =>
  Effect.scoped(
    Effect.gen(function* () {
      // Held while it is imported: two processes importing at once import it once.
      if (Either.isLeft(yield* Effect.either(store.lock(id)))) return undefined
      const existing = yield* Effect.either(store.load(id))
      if (Either.isRight(existing) || existing.left._tag === "ResearchSessionCorrupt") return undefined
      const found = yield* find
      const data = yield* Effect.try({
        try: (): unknown => JSON.parse(found.text),
        catch: () => `${found.from} is not JSON`
      })
      const session = yield* Effect.mapError(decodeStored(data), (error) => error.reason)
      if (session.id !== id) return yield* Effect.fail(`${found.from} holds session ${session.id}`)
      const message = (error: { readonly message: string }) => error.message
      yield* Effect.mapError(store.save(session), message)
      const events = yield* Effect.forEach(found.events, (line) => Effect.option(ResearchEvents.decodeJson(line)))
      yield* Effect.mapError(store.appendEvents(id, Arr.getSomes(events)), message)
      if (found.report !== undefined) yield* Effect.mapError(store.saveReport(id, found.report), message)
      for (const [name, content] of found.artefacts)
        yield* Effect.mapError(store.saveArtefact(id, name, content), message)
      return session.status
    })
  )
