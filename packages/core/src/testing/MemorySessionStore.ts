/**
 * A `SessionStore` in memory, with the same id rules and locking as the SQL store. Part of the public testing API.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { ResearchSessionBusy, ResearchSessionNotFound } from "../Errors.js"
import type { ResearchEvent } from "../ResearchEvents.js"
import * as Session from "../Session.js"
import * as SessionStore from "../SessionStore.js"

interface Entry {
  /** Undefined until the session is saved: events and a report can come first, as with the SQL store. */
  readonly session: Session.Session | undefined
  readonly events: ReadonlyArray<ResearchEvent>
  readonly report: string | undefined
  readonly artefacts: ReadonlyMap<string, string>
}

const empty: Entry = { session: undefined, events: [], report: undefined, artefacts: new Map() }

/** What the memory store holds, for assertions. */
export interface Inspect {
  readonly report: (id: string) => Effect.Effect<string | undefined>
  /** How many times each session was saved. */
  readonly saves: (id: string) => Effect.Effect<number>
}

/** A listed entry, marked when a simulated run made it. */
const summaryOf = (entry: Entry): ReadonlyArray<Session.SessionSummary> =>
  entry.session === undefined
    ? []
    : [
        entry.artefacts.has(SessionStore.simulatedMark)
          ? new Session.SessionSummary({ ...Session.summarize(entry.session), simulated: true })
          : Session.summarize(entry.session)
      ]

/** The artefact of that name of every session that keeps one, by session id. */
const artefactOfEach = (entries: Ref.Ref<Map<string, Entry>>, name: string) =>
  Effect.flatMap(SessionStore.validateArtefactName(name), (valid) =>
    Effect.map(Ref.get(entries), (map) => {
      const found = new Map<string, string>()
      for (const [id, entry] of map) {
        const content = entry.artefacts.get(valid)
        if (content !== undefined) found.set(id, content)
      }
      return found
    })
  )

/** A memory store and a way to look inside it. */
export const make: Effect.Effect<SessionStore.Service & Inspect> = Effect.gen(function* () {
  const entries = yield* Ref.make(new Map<string, Entry>())
  const saveCounts = yield* Ref.make(new Map<string, number>())
  const locks = yield* Ref.make(new Set<string>())
  const update = (id: string, f: (entry: Entry | undefined) => Entry | undefined) =>
    Ref.update(entries, (map) => {
      const next = new Map(map)
      const entry = f(map.get(id))
      if (entry === undefined) next.delete(id)
      else next.set(id, entry)
      return next
    })
  const get = (id: string) =>
    Effect.flatMap(Ref.get(entries), (map) => {
      const entry = map.get(id)
      return entry === undefined ? Effect.fail(new ResearchSessionNotFound({ sessionId: id })) : Effect.succeed(entry)
    })
  return {
    save: (session) =>
      Effect.zipRight(
        Session.validateId(session.id),
        Effect.zipRight(
          update(session.id, (entry = empty) => ({ ...entry, session })),
          Ref.update(saveCounts, (m) => new Map(m).set(session.id, (m.get(session.id) ?? 0) + 1))
        )
      ),
    load: (id) =>
      Effect.flatMap(Session.validateId(id), (id) =>
        Effect.flatMap(get(id), (entry) =>
          entry.session === undefined
            ? Effect.fail(new ResearchSessionNotFound({ sessionId: id }))
            : Effect.succeed(entry.session)
        )
      ),
    appendEvents: (id, events) =>
      Effect.zipRight(
        Session.validateId(id),
        update(id, (entry = empty) => ({ ...entry, events: [...entry.events, ...events] }))
      ),
    events: (id) => Effect.flatMap(Session.validateId(id), (id) => Effect.map(get(id), (entry) => entry.events)),
    saveReport: (id, markdown) =>
      Effect.zipRight(
        Session.validateId(id),
        update(id, (entry = empty) => ({ ...entry, report: markdown }))
      ),
    saveArtefact: (id, name, content) =>
      Effect.zipRight(
        Effect.zip(Session.validateId(id), SessionStore.validateArtefactName(name)),
        update(id, (entry = empty) => ({ ...entry, artefacts: new Map(entry.artefacts).set(name, content) }))
      ),
    artefact: (id, name) =>
      Effect.flatMap(Effect.zip(Session.validateId(id), SessionStore.validateArtefactName(name)), ([id, name]) =>
        Effect.map(get(id), (entry) => Option.fromNullable(entry.artefacts.get(name)))
      ),
    artefactOfEach: (name) => artefactOfEach(entries, name),
    deleteArtefact: (id, name) =>
      Effect.zipRight(
        Effect.zip(Session.validateId(id), SessionStore.validateArtefactName(name)),
        update(id, (entry) => {
          if (entry === undefined) return undefined
          const artefacts = new Map(entry.artefacts)
          artefacts.delete(name)
          return { ...entry, artefacts }
        })
      ),
    list: Effect.map(Ref.get(entries), (map) =>
      [...map.values()].flatMap(summaryOf).sort((a, b) => b.createdAt - a.createdAt)
    ),
    delete: (id) =>
      Effect.flatMap(Session.validateId(id), (id) =>
        Effect.zipRight(
          get(id),
          Effect.flatMap(Ref.get(locks), (held) =>
            held.has(id)
              ? Effect.fail(new ResearchSessionBusy({ sessionId: id, holder: "this process" }))
              : update(id, () => undefined)
          )
        )
      ),
    lock: (id) =>
      Effect.flatMap(Session.validateId(id), (id) =>
        Effect.acquireRelease(
          Effect.flatMap(
            Ref.modify(locks, (held) => (held.has(id) ? [false, held] : [true, new Set(held).add(id)])),
            (acquired) =>
              acquired ? Effect.void : Effect.fail(new ResearchSessionBusy({ sessionId: id, holder: "this process" }))
          ),
          () =>
            Ref.update(locks, (held) => {
              const next = new Set(held)
              next.delete(id)
              return next
            })
        )
      ),
    report: (id) => Effect.map(Ref.get(entries), (map) => map.get(id)?.report),
    saves: (id) => Effect.map(Ref.get(saveCounts), (m) => m.get(id) ?? 0)
  }
})

/** A fresh memory store as the `SessionStore` in context. */
export const layer: Layer.Layer<SessionStore.SessionStore> = Layer.effect(SessionStore.SessionStore, make)
