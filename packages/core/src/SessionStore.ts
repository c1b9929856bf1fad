/**
 * The session store port: save and load sessions, keep their event logs and reports, list and delete them, and lock
 * a session while a run works on it.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { InvalidInput, SessionBusy, SessionCorrupt, SessionNotFound } from "./Errors.js"
import type { ResearchEvent } from "./ResearchEvents.js"
import type { Session, SessionSummary } from "./Session.js"

/** A session store. Ids are validated: an id that could name another path is `InvalidInput`. */
export interface Service {
  /** Writes the session atomically; a crash leaves the previous checkpoint intact. */
  readonly save: (session: Session) => Effect.Effect<void, InvalidInput>
  readonly load: (id: string) => Effect.Effect<Session, SessionNotFound | SessionCorrupt | InvalidInput>
  readonly appendEvents: (id: string, events: ReadonlyArray<ResearchEvent>) => Effect.Effect<void, InvalidInput>
  readonly events: (id: string) => Effect.Effect<ReadonlyArray<ResearchEvent>, SessionNotFound | InvalidInput>
  readonly saveReport: (id: string, markdown: string) => Effect.Effect<void, InvalidInput>
  readonly list: Effect.Effect<ReadonlyArray<SessionSummary>>
  /** Removes the session and its files; `SessionBusy` while a live run holds it. */
  readonly delete: (id: string) => Effect.Effect<void, SessionNotFound | SessionBusy | InvalidInput>
  /** Holds the session for the life of the scope; `SessionBusy` while another live run holds it. */
  readonly lock: (id: string) => Effect.Effect<void, SessionBusy | InvalidInput, Scope.Scope>
}

/** The session store in context. */
export class SessionStore extends Context.Tag("@deep-research/core/SessionStore")<SessionStore, Service>() {}
