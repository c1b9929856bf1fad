/** `deep-research resume`: continues a session from its last checkpoint, here or on the cluster. */
import { Command } from "@effect/cli"
import { Session } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { usageError } from "../internal/commandLine/exited.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import { runSession } from "../internal/terminal/runSession.js"
import * as StoreCommands from "./store.js"
import { withoutSecrets } from "../internal/config/credentials.js"
import { loadCluster, refused } from "./cluster.js"
import { checkModelServers, purposeOf, resolveConfig, toFlags } from "./configuration.js"

export const resume = Command.make(
  "resume",
  { id: StoreCommands.sessionIdArg, ...ParserOptions.withRoleModels(OptionTable.commands.resume) },
  ({ answer, id, ...given }) =>
    Effect.gen(function* () {
      // A bad id is the real problem whatever else is missing: it is said first.
      yield* Effect.mapError(Session.validateId(id), (error) => usageError(error.message))
      const options = yield* StoreCommands.rememberSimulated(id, given, "resumed")
      const flags = toFlags(options)
      const resolved = yield* resolveConfig(flags, purposeOf(flags))
      // An answer holding a key or the token goes on with `[redacted]` in its place, as a question does.
      const reply = Option.getOrUndefined(Option.map(answer, (text) => withoutSecrets(resolved.credentials, text)))
      if (resolved.credentials.databaseUrl !== undefined) {
        const [ClusterRun] = yield* loadCluster
        return yield* Effect.mapError(ClusterRun.resume(resolved, id, reply), refused)
      }
      yield* checkModelServers(resolved, "The session was left as it was.")
      // A budget given again replaces the stored one; the other settings are the session's.
      yield* runSession(resolved, flags, {
        resumeId: id,
        answer: reply,
        budget: { maxTokens: flags.budgetTokens, maxUsd: flags.budgetUsd }
      })
    })
).pipe(
  Command.withDescription(
    "Continue a session from its last checkpoint; finished researchers are not redone. Give the model and search " +
      "options again (the session keeps its research settings, never the wiring)."
  )
)
