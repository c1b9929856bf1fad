/** `deep-research run` (the default command): researches a question here, or sends it to the cluster. */
import { Args, Command } from "@effect/cli"
import * as Effect from "effect/Effect"
import { withoutSecrets } from "../internal/config/credentials.js"
import { usageError } from "../internal/commandLine/exited.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import { runSession } from "../internal/terminal/runSession.js"
import { loadCluster, refused } from "./cluster.js"
import { checkModelServers, purposeOf, resolveConfig, toFlags } from "./configuration.js"

const question = Args.text({ name: "question" }).pipe(Args.withDescription("What to research, in any language"))

export const runCommand = Command.make(
  "run",
  { question, ...ParserOptions.withRoleModels(OptionTable.commands.run) },
  ({ detach, question, ...options }) =>
    Effect.gen(function* () {
      if (question.trim() === "") return yield* usageError("The question is empty.")
      const flags = toFlags(options)
      const resolved = yield* resolveConfig(flags, purposeOf(flags))
      // A question holding a key or the token is researched with `[redacted]` in its place: no model is sent it.
      const asked = withoutSecrets(resolved.credentials, question)
      if (resolved.credentials.databaseUrl !== undefined) {
        const [ClusterRun] = yield* loadCluster
        return yield* Effect.mapError(ClusterRun.submit(resolved, asked, { detach }), refused)
      }
      yield* checkModelServers(resolved, "No session was made.")
      yield* runSession(resolved, flags, { question: asked })
    })
).pipe(Command.withDescription("Research a question and write a cited report (the default command)"))
