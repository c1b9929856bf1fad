/**
 * The config file: the first of the candidate places that holds one, decoded. Read before the configuration is
 * resolved, and by the commands over the session store for the store folder it names.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as CliConfig from "../../CliConfig.js"
import { usageError } from "../commandLine/exited.js"

/** Reads the first config file that exists. */
export const loadConfigFile = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  for (const candidate of CliConfig.configFileCandidates(process.cwd(), process.env)) {
    const exists = yield* fs.exists(candidate).pipe(Effect.orElseSucceed(() => false))
    if (!exists) continue
    const text = yield* fs
      .readFileString(candidate)
      .pipe(Effect.mapError((error) => usageError(`Cannot read ${candidate}: ${error.message}`)))
    return yield* Either.match(CliConfig.decodeFileConfig(text, candidate), {
      onLeft: (error) => Effect.fail(usageError(error.message)),
      onRight: Effect.succeed
    })
  }
  return undefined
})
