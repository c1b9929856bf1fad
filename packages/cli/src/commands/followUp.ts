/**
 * `deep-research ask` and `deep-research continue`: after the report. `ask` answers a follow-up question from the
 * session's stored sources (and with --research goes on to research what they do not cover); `continue` researches a
 * new direction and writes the report again as a new version. Both run here, against the session's store; with
 * --database, `continue` is sent to the cluster (a worker researches it, this process follows it), and `ask` still runs
 * here, with this process's model, against the database's store.
 */
import { Args, Command } from "@effect/cli"
import { FollowUp, Session } from "@deep-research/core"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Exited, usageError } from "../internal/commandLine/exited.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import { withoutSecrets } from "../internal/config/credentials.js"
import { answerText } from "../internal/terminal/followUps.js"
import { runSession } from "../internal/terminal/runSession.js"
import { loadCluster, refused } from "./cluster.js"
import { checkModelServers, purposeOf, resolveConfig, toFlags } from "./configuration.js"
import * as StoreCommands from "./store.js"

const loadWiring = Effect.promise(() => import("../Wiring.js"))

/**
 * How a failed answer ends the command: a usage error (exit 2), or the answer's failure (exit 1); a session whose
 * budget cannot pay for an answer says how to give it more.
 */
const answerFailed = (error: { readonly _tag: string; readonly message: string }) =>
  new Exited({
    code: error._tag === "ResearchInvalidInput" || error._tag === "ResearchSessionNotFound" ? 2 : 1,
    message:
      error._tag === "ResearchInvalidInput" ||
      error._tag === "ResearchSessionNotFound" ||
      error._tag === "ResearchSessionBusy"
        ? error.message
        : `The question was not answered: ${error.message}\nThe session is as it was; ` +
          (error._tag === "ResearchBudgetExhausted"
            ? "ask again with a larger budget for the session (--budget-usd or --budget-tokens)."
            : "ask again once the cause is fixed.")
  })

/** `ask`: a follow-up question answered from a finished session's stored sources. */
export const ask = Command.make(
  "ask",
  {
    id: StoreCommands.sessionIdArg,
    question: Args.text({ name: "question" }).pipe(Args.withDescription("The follow-up question")),
    ...ParserOptions.withRoleModels(OptionTable.commands.ask)
  },
  ({ id, question, research, ...given }) =>
    Effect.gen(function* () {
      yield* Effect.mapError(Session.validateId(id), (error) => usageError(error.message))
      if (question.trim() === "") return yield* usageError("the question is empty")
      const options = yield* StoreCommands.rememberSimulated(id, given, "resumed")
      const flags = toFlags(options)
      const resolved = yield* resolveConfig(flags, purposeOf(flags))
      yield* checkModelServers(resolved, "The session was left as it was.")
      const Wiring = yield* loadWiring
      // A budget given here replaces the session's, as it does for resume and continue.
      const budget = { maxTokens: flags.budgetTokens, maxUsd: flags.budgetUsd }
      const { answer } = yield* FollowUp.ask(id, withoutSecrets(resolved.credentials, question), { budget }).pipe(
        Effect.provide(Wiring.layer(resolved)),
        Effect.mapError(answerFailed)
      )
      yield* resolved.json
        ? Console.log(JSON.stringify(Schema.encodeSync(FollowUp.Answer)(answer)))
        : Console.log(answerText(id, answer))
      if (answer.covered || !research) return
      // Not covered, and asked to research it: a short continuation (one round) in the direction the answer named.
      yield* Effect.sync(() => process.stderr.write("Researching it now: a continuation of one round.\n"))
      yield* runSession(resolved, flags, {
        resumeId: id,
        direction: answer.suggestedDirection ?? question,
        rounds: 1
      })
    })
).pipe(
  Command.withDescription(
    "Answer a follow-up question from a finished session's stored sources, cited with its own numbers and checked " +
      "(--research: research it when they do not cover it)"
  )
)

/** `continue`: a finished session researches a new direction; its report is written again as a new version. */
export const continueCommand = Command.make(
  "continue",
  {
    id: StoreCommands.sessionIdArg,
    direction: Args.text({ name: "direction" }).pipe(Args.withDescription("What to research further")),
    ...ParserOptions.withRoleModels(OptionTable.commands.continue)
  },
  ({ direction, id, rounds, ...given }) =>
    Effect.gen(function* () {
      yield* Effect.mapError(Session.validateId(id), (error) => usageError(error.message))
      if (direction.trim() === "") return yield* usageError("the direction is empty")
      const options = yield* StoreCommands.rememberSimulated(id, given, "resumed")
      const flags = toFlags(options)
      const resolved = yield* resolveConfig(flags, purposeOf(flags))
      const budget = { maxTokens: flags.budgetTokens, maxUsd: flags.budgetUsd }
      const scrubbed = withoutSecrets(resolved.credentials, direction)
      // On a database the continuation is a run of the cluster's: a worker researches it, as it would `resume`.
      if (resolved.credentials.databaseUrl !== undefined) {
        const [ClusterRun] = yield* loadCluster
        const options = { rounds: Option.getOrUndefined(rounds), budget }
        return yield* Effect.mapError(ClusterRun.extend(resolved, id, scrubbed, options), refused)
      }
      yield* checkModelServers(resolved, "The session was left as it was.")
      yield* runSession(resolved, flags, {
        resumeId: id,
        direction: scrubbed,
        rounds: Option.getOrUndefined(rounds),
        budget
      })
    })
).pipe(
  Command.withDescription(
    "Go deeper: research a new direction from a finished session's brief, findings and sources (nothing read is " +
      "fetched again), and write its report again as a new version"
  )
)
