/**
 * From a command's parsed options to its resolved configuration: the flags the options make, the model an
 * OpenAI-compatible server serves when none is named, and the purpose a database gives a command. Shared by the
 * commands that research, serve or judge.
 */
import type { Options } from "@effect/cli"
import { Usage } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as CliConfig from "../CliConfig.js"
import { loadConfigFile } from "../internal/config/configFile.js"
import { readOutlineFile } from "../internal/config/reportShape.js"
import { usageError } from "../internal/commandLine/exited.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import * as ModelProbe from "../internal/config/modelProbe.js"
import * as ServerModels from "../internal/config/serverModels.js"

/** The options the research commands share: what `toFlags` reads. */
const researchOptions = ParserOptions.withRoleModels(OptionTable.research)

type OptionValue<T> = T extends Options.Options<infer A> ? A : never

type ResearchFlags = {
  readonly [K in keyof typeof researchOptions]: OptionValue<(typeof researchOptions)[K]>
}

/** The options that steer research (the source policy, the review, the report's language): not every command has them. */
type SteeringKey =
  | "includeDomains"
  | "excludeDomains"
  | "since"
  | "until"
  | "sources"
  | "review"
  | "reportLanguage"
  | "words"
  | "outline"
  | "instructions"
  | "library"

const optional = <A>(option: Option.Option<A> | undefined): A | undefined =>
  option === undefined ? undefined : Option.getOrUndefined(option)

/** The parsed research options as the configuration takes them: an option not given is undefined. */
export const toFlags = (
  flags: Omit<ResearchFlags, SteeringKey> & Partial<Pick<ResearchFlags, SteeringKey>>
): CliConfig.Flags => {
  const modelRoles: Partial<Record<Usage.Role, string>> = {}
  for (const role of Usage.roles) {
    const spec = flags.roleModels[role]
    if (Option.isSome(spec)) modelRoles[role] = spec.value
  }
  return {
    model: Option.getOrUndefined(flags.model),
    modelRoles,
    search: Option.getOrUndefined(flags.search),
    corpus: Option.getOrUndefined(flags.corpus),
    maxRounds: Option.getOrUndefined(flags.maxRounds),
    concurrency: Option.getOrUndefined(flags.concurrency),
    maxToolCalls: Option.getOrUndefined(flags.maxToolCalls),
    budgetTokens: Option.getOrUndefined(flags.budgetTokens),
    budgetUsd: Option.getOrUndefined(flags.budgetUsd),
    noClarify: flags.noClarify,
    requireSources: flags.requireSources,
    noVerify: flags.noVerify,
    includeDomains: optional(flags.includeDomains),
    excludeDomains: optional(flags.excludeDomains),
    since: optional(flags.since),
    until: optional(flags.until),
    sources: optional(flags.sources),
    review: flags.review,
    reportLanguage: optional(flags.reportLanguage),
    words: optional(flags.words),
    outline: optional(flags.outline),
    instructions: optional(flags.instructions),
    library: flags.library,
    out: Option.getOrUndefined(flags.out),
    store: Option.getOrUndefined(flags.store),
    database: Option.getOrUndefined(flags.database),
    json: flags.json,
    simulate: flags.simulate
  }
}

/**
 * With OPENAI_BASE_URL (an OpenAI-compatible server) and no model named anywhere, the server is asked which model it
 * serves: the one it serves is used and said, several or none make a usage error naming them.
 */
const withServerModel = (flags: CliConfig.Flags, file: CliConfig.FileConfig | undefined) =>
  Effect.gen(function* () {
    const credentials = CliConfig.credentialsFrom(process.env)
    const named = flags.model ?? process.env["DEEP_RESEARCH_MODEL"] ?? file?.model
    if (named !== undefined || flags.simulate === true || credentials.openaiBaseUrl === undefined) return flags
    if (credentials.anthropicApiKey !== undefined) return flags
    const found = yield* ServerModels.discover(credentials.openaiBaseUrl, credentials.openaiApiKey)
    if (found._tag === "Unclear") return yield* usageError(found.message)
    yield* Effect.sync(() =>
      process.stderr.write(`Using ${found.model}, the one model the server at ${credentials.openaiBaseUrl} serves.\n`)
    )
    return { ...flags, model: `openai:${found.model}` }
  })

/** Flags, environment and config file, resolved; a problem is a usage error (exit 2). */
export const resolveConfig = (flags: CliConfig.Flags, purpose: CliConfig.Purpose = "research") =>
  Effect.flatMap(loadConfigFile, (file) =>
    Effect.flatMap(purpose === "research" ? withServerModel(flags, file) : Effect.succeed(flags), (resolved) =>
      Effect.flatMap(readOutlineFile(resolved.outline), (outline) =>
        Either.isLeft(outline)
          ? usageError(outline.left)
          : Effect.mapError(
              CliConfig.resolveEffect({ ...resolved, outline: outline.right }, process.env, file, purpose),
              (error) => usageError(error.message)
            )
      )
    )
  )

/**
 * With a database, research is sent to the cluster's workers, which bring the models and search: none is needed here
 * (`serve` and `mcp` judge reports with a model when one is given).
 */
export const purposeOf = (flags: CliConfig.Flags): CliConfig.Purpose =>
  flags.database !== undefined || CliConfig.credentialsFrom(process.env).databaseUrl !== undefined
    ? "submission"
    : "research"

/**
 * Before a run here makes or takes a session: one quick request to each model server it will use, so that one that
 * does not answer is a configuration error (exit 2) naming its address and the usual cause, with nothing stored.
 */
export const checkModelServers = (resolved: CliConfig.Resolved, outcome: string) =>
  resolved.simulate
    ? Effect.void
    : Effect.flatMap(ModelProbe.unreachable(resolved), (message) =>
        message === undefined ? Effect.void : usageError(`${message}\n${outcome}`)
      )
