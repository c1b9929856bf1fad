/**
 * The session store port: save and load sessions, keep their event logs and reports, list and delete them, and lock
 * a session while a run works on it.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { ResearchInvalidInput } from "./Errors.js"
import type { ResearchSessionBusy, ResearchSessionCorrupt, ResearchSessionNotFound } from "./Errors.js"
import type { ResearchEvent } from "./ResearchEvents.js"
import type { Session, SessionSummary } from "./Session.js"

/** A session store. Ids are validated: an id that could name another path is `ResearchInvalidInput`. */
export interface Service {
  /** Writes the session atomically; a crash leaves the previous checkpoint intact. */
  readonly save: (session: Session) => Effect.Effect<void, ResearchInvalidInput>
  readonly load: (
    id: string
  ) => Effect.Effect<Session, ResearchSessionNotFound | ResearchSessionCorrupt | ResearchInvalidInput>
  readonly appendEvents: (id: string, events: ReadonlyArray<ResearchEvent>) => Effect.Effect<void, ResearchInvalidInput>
  readonly events: (
    id: string
  ) => Effect.Effect<ReadonlyArray<ResearchEvent>, ResearchSessionNotFound | ResearchInvalidInput>
  readonly saveReport: (id: string, markdown: string) => Effect.Effect<void, ResearchInvalidInput>
  /**
   * Keeps a named artefact beside the session (an evaluation, for example), replacing one of the same name
   * atomically. Names are checked by `validateArtefactName`.
   */
  readonly saveArtefact: (id: string, name: string, content: string) => Effect.Effect<void, ResearchInvalidInput>
  /** A named artefact of the session, if one was kept; `ResearchSessionNotFound` when the store holds nothing of the session. */
  readonly artefact: (
    id: string,
    name: string
  ) => Effect.Effect<Option.Option<string>, ResearchSessionNotFound | ResearchInvalidInput>
  /**
   * The artefact of that name of every session that keeps one, by session id, in one read: what a listing needs of
   * each session (a server's owner marks) without a read a session. Optional: a store without it leaves it out, and
   * its callers read each session's `artefact`.
   */
  readonly artefactOfEach?: (name: string) => Effect.Effect<ReadonlyMap<string, string>, ResearchInvalidInput>
  /** Removes a named artefact of the session; removing one that was never kept (or is gone) does nothing. */
  readonly deleteArtefact: (id: string, name: string) => Effect.Effect<void, ResearchInvalidInput>
  readonly list: Effect.Effect<ReadonlyArray<SessionSummary>>
  /** Removes the session and its files; `ResearchSessionBusy` while a live run holds it. */
  readonly delete: (
    id: string
  ) => Effect.Effect<void, ResearchSessionNotFound | ResearchSessionBusy | ResearchInvalidInput>
  /** Holds the session for the life of the scope; `ResearchSessionBusy` while another live run holds it. */
  readonly lock: (id: string) => Effect.Effect<void, ResearchSessionBusy | ResearchInvalidInput, Scope.Scope>
}

/**
 * The artefact that marks a session a simulated run made (so that resume and evaluate simulate it too): `list` says
 * which sessions carry it (`SessionSummary.simulated`).
 */
export const simulatedMark = "simulated.json"

/** An artefact's name: lower-case letters, digits, `-` and `_`, then an extension (`evaluation.json`). */
const artefactName = /^[a-z0-9][a-z0-9_-]{0,62}\.[a-z0-9]{1,8}$/

/** The names the stores keep for themselves, never an artefact's. */
const reservedNames: ReadonlySet<string> = new Set(["session.json", "events.jsonl", "report.md"])

/** Refuses a name that could be a path or one of the store's own names. */
export const validateArtefactName = (name: string): Effect.Effect<string, ResearchInvalidInput> =>
  artefactName.test(name) && !reservedNames.has(name)
    ? Effect.succeed(name)
    : Effect.fail(
        new ResearchInvalidInput({
          reason:
            `${JSON.stringify(name)} is not an artefact name (lower-case letters, digits, - and _, then an ` +
            "extension; not session.json, events.jsonl or report.md)"
        })
      )

/** The session store in context. */
export class SessionStore extends Context.Tag("@deep-research/core/SessionStore")<SessionStore, Service>() {}
