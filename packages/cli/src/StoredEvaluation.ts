/**
 * `deep-research evaluate <id>` and the MCP `evaluate_report` tool: the evaluation package judges the report and checks
 * its citations; the session store keeps the result beside the session, as its `evaluation.json` artefact (a file in
 * the session's folder for the file store, a row for PostgreSQL).
 */
import { type Errors, type ModelRouter, SessionStore } from "@deep-research/core"
import { Evaluation } from "@deep-research/evaluation"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { conflict, type RunConflict } from "./RunSchema.js"

/** The name of the artefact an evaluation is kept as. */
export const artefactName = "evaluation.json"

/** The evaluation as the JSON the store keeps. */
export const encode = (evaluation: Evaluation.Evaluation): string =>
  `${JSON.stringify(Schema.encodeSync(Evaluation.Evaluation)(evaluation), null, 2)}\n`

/**
 * Loads a session, evaluates its report (a session without one is a `RunConflict` saying why) and has the store keep the result; returns the evaluation and where it is
 * kept, as `where` describes the store's place for an artefact.
 */
export const evaluateStored = (
  sessionId: string,
  where: (sessionId: string, name: string) => string
): Effect.Effect<
  { readonly evaluation: Evaluation.Evaluation; readonly file: string },
  Errors.ResearchError | RunConflict,
  ModelRouter.ModelRouter | SessionStore.SessionStore
> =>
  Effect.gen(function* () {
    const sessions = yield* SessionStore.SessionStore
    const session = yield* sessions.load(sessionId)
    if (session.report === undefined) return yield* conflict(session.id, session.status, "has no report to evaluate")
    const evaluation = yield* Evaluation.evaluateSession(session)
    yield* sessions.saveArtefact(session.id, artefactName, encode(evaluation))
    return { evaluation, file: where(session.id, artefactName) }
  })

/** The evaluation as text for a terminal. */
export const format = (evaluation: Evaluation.Evaluation): string => Evaluation.format(evaluation)
