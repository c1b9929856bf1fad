/**
 * `deep-research evaluate <id>` and the MCP `evaluate_report` tool: the evaluation package judges the report and checks
 * its citations; this module keeps the result beside the session as `evaluation.json`.
 */
import { Errors, type ModelRouter, SessionStore } from "@deep-research/core"
import { Evaluation } from "@deep-research/evaluation"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"

/** The file an evaluation is kept in, beside the session's other files. */
export const fileOf = (sessionsDirectory: string, sessionId: string): string =>
  nodePath.join(sessionsDirectory, sessionId, "evaluation.json")

/** Writes the evaluation beside its session, atomically (written aside, then renamed). */
export const store = (
  sessionsDirectory: string,
  evaluation: Evaluation.Evaluation
): Effect.Effect<string, Errors.InvalidInput> => {
  const file = fileOf(sessionsDirectory, evaluation.sessionId)
  const json = `${JSON.stringify(Schema.encodeSync(Evaluation.Evaluation)(evaluation), null, 2)}\n`
  return Effect.tryPromise({
    try: async () => {
      await fs.writeFile(`${file}.tmp`, json)
      await fs.rename(`${file}.tmp`, file)
      return file
    },
    catch: (error) => new Errors.InvalidInput({ reason: `cannot write ${file}: ${String(error)}` })
  })
}

/** Loads a session, evaluates its report and stores the result; returns the evaluation and where it was written. */
export const evaluateStored = (
  sessionsDirectory: string,
  sessionId: string
): Effect.Effect<
  { readonly evaluation: Evaluation.Evaluation; readonly file: string },
  Errors.ResearchError,
  ModelRouter.ModelRouter | SessionStore.SessionStore
> =>
  Effect.gen(function* () {
    const sessions = yield* SessionStore.SessionStore
    const session = yield* sessions.load(sessionId)
    const evaluation = yield* Evaluation.evaluateSession(session)
    const file = yield* store(sessionsDirectory, evaluation)
    return { evaluation, file }
  })

/** The evaluation as text for a terminal. */
export const format = (evaluation: Evaluation.Evaluation): string => Evaluation.format(evaluation)
