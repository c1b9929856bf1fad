/**
 * The CLI's configuration, resolved in this precedence: flags, environment, a config file
 * (`deep-research.config.json` in the current folder or the user's config folder), defaults. API keys come only from
 * the environment and stay `Redacted`.
 */
import { ResearchConfig, Resilience, Usage } from "@deep-research/core"
import * as Variables from "@deep-research/providers/Environment"
import * as Keyless from "@deep-research/providers/Keyless"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import {
  ConfigError,
  type Models,
  type Purpose,
  resolve as resolveBackends,
  SearchBackend
} from "./internal/config/backends.js"
import {
  configFileCandidates,
  type Credentials,
  credentialsFrom,
  homeOf,
  nonEmpty,
  redactedEnv
} from "./internal/config/credentials.js"
import * as DecodeIssues from "./internal/serving/decodeIssues.js"
import { envNumber, type NumberSetting, numberProblem } from "./internal/config/numbers.js"
import * as OptionTable from "./internal/commandLine/optionTable.js"
import * as RunSchema from "./RunSchema.js"
import { steeringOf } from "./internal/config/steering.js"
import { shapeOf } from "./internal/config/reportShape.js"

// =============================================================================
// Inputs
// =============================================================================

export { ConfigError, SearchBackend }
export type { Credentials, Models, Purpose }
export { configFileCandidates, credentialsFrom }

/** What the flags said; absent fields were not given. */
export interface Flags {
  readonly model?: string | undefined
  readonly modelRoles?: Partial<Record<Usage.Role, string>> | undefined
  readonly search?: string | undefined
  readonly corpus?: string | undefined
  readonly maxRounds?: number | undefined
  readonly concurrency?: number | undefined
  readonly maxToolCalls?: number | undefined
  readonly budgetTokens?: number | undefined
  readonly budgetUsd?: number | undefined
  readonly noClarify?: boolean | undefined
  /** Fail a run whose report rests on no source. */
  readonly requireSources?: boolean | undefined
  /** Leave the report's citations unchecked against their sources. */
  readonly noVerify?: boolean | undefined
  /** The source policy (lists comma-separated), the review of the plan, the report's language (`docs/steering.md`). */
  readonly includeDomains?: string | undefined
  readonly excludeDomains?: string | undefined
  readonly since?: string | undefined
  readonly until?: string | undefined
  readonly sources?: string | undefined
  readonly review?: boolean | undefined
  readonly reportLanguage?: string | undefined
  /** The report's length (words or a named size), outline (titles `;`-separated, or read from a file) and instructions. */
  readonly words?: string | undefined
  readonly outline?: string | undefined
  readonly instructions?: string | undefined
  /** Start from the library of earlier sessions' sources (`docs/research-library.md`). */
  readonly library?: boolean | undefined
  readonly out?: string | undefined
  readonly store?: string | undefined
  /** A PostgreSQL URL: sessions live in that database and run on the cluster's runners. */
  readonly database?: string | undefined
  readonly json?: boolean | undefined
  readonly simulate?: boolean | undefined
  /** Research runs at once at most in one process (the MCP server's sessions); others wait their turn. */
  readonly maxSessions?: number | undefined
}

/** The config file's shape. Every field is optional. */
export class FileConfig extends Schema.Class<FileConfig>("@deep-research/cli/FileConfig")({
  model: Schema.optional(Schema.String),
  models: Schema.optional(Schema.partial(Schema.Record({ key: Usage.Role, value: Schema.String }))),
  search: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
  corpus: Schema.optional(Schema.String),
  store: Schema.optional(Schema.String),
  maxRounds: Schema.optional(RunSchema.setting.maxRounds),
  concurrency: Schema.optional(RunSchema.setting.concurrency),
  maxToolCalls: Schema.optional(RunSchema.setting.maxToolCalls),
  budgetTokens: Schema.optional(RunSchema.setting.budgetTokens),
  budgetUsd: Schema.optional(RunSchema.setting.budgetUsd),
  clarify: Schema.optional(Schema.Boolean),
  /** Fail a run whose report rests on no source (`--require-sources`). */
  requireSources: Schema.optional(Schema.Boolean),
  /** Check every cited sentence against its sources (default true; `--no-verify` or `verify: false` turns it off). */
  verify: Schema.optional(Schema.Boolean),
  maxSessions: Schema.optional(RunSchema.setting.maxSessions),
  /** The source policy, the review of the plan and the report's language, as the flags (`docs/steering.md`). */
  includeDomains: Schema.optional(Schema.Array(Schema.String)),
  excludeDomains: Schema.optional(Schema.Array(Schema.String)),
  since: Schema.optional(Schema.String),
  until: Schema.optional(Schema.String),
  sources: Schema.optional(Schema.Array(Schema.String)),
  review: Schema.optional(Schema.Boolean),
  reportLanguage: Schema.optional(Schema.String),
  /** The report's length (words or a named size), outline (titles, or one `;`-separated line) and instructions. */
  words: Schema.optional(Schema.Union(Schema.Int, Schema.String)),
  outline: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
  instructions: Schema.optional(Schema.String),
  /** Start every run from the library of earlier sessions' sources (`--library`). */
  library: Schema.optional(Schema.Boolean),
  /** Any other knob of `ResearchConfig`, by its name. */
  research: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /**
   * The resilience policy: per kind of provider (`model`, `search`, `extract`) and per provider by name (`providers`):
   * requestsPerSecond, burst, maxRequestsPerSecond, adaptiveRate, maxConcurrency, attemptTimeout (ms), maxRetries, ...
   */
  resilience: Schema.optional(Resilience.Settings)
}) {}

/** The environment, as a plain map (`process.env`). */
export type Environment = Readonly<Record<string, string | undefined>>

// =============================================================================
// Result
// =============================================================================

/** Everything a run needs to wire its layers. */
export interface Resolved {
  /** `provider:model` specs: the default model, and overrides per role and per tier. */
  readonly models: Models
  readonly search: ReadonlyArray<SearchBackend>
  /** True when nothing named the search and it is the keys' default (the keyless set when there is no key). */
  readonly searchDefaulted: boolean
  readonly corpus: string | undefined
  readonly storeDir: string
  readonly research: ResearchConfig.ResearchConfig
  readonly out: string | undefined
  /** Whether a clarifying question may be asked (on a terminal, or through MCP); else research goes on without. */
  readonly askClarification: boolean
  readonly json: boolean
  readonly simulate: boolean
  /** Research runs at once at most in this process (a `SessionLimit`); undefined: no limit. */
  readonly maxSessions: number | undefined
  /** The resilience settings the user gave (the providers' own defaults go underneath when wiring). */
  readonly resilience: Resilience.Settings
  readonly credentials: Credentials
}

// =============================================================================
// Resolution
// =============================================================================

/** The token `deep-research serve` asks of every API client (`DEEP_RESEARCH_API_TOKEN`), if one is set. */
export const apiTokenFrom = (env: Environment): Redacted.Redacted<string> | undefined =>
  redactedEnv(env, Variables.apiToken)

const first = <A>(...values: ReadonlyArray<A | undefined>): A | undefined => values.find((v) => v !== undefined)

/** The user's home folder from the environment, for `~` and the default store. */

/** Expands a leading `~`. */
export const expandHome = (path: string, env: Environment): string => Variables.expandHome(path, homeOf(env))

/** A decoding error as one line per problem, each naming the field it is about. */
const formatIssues = (error: ParseResult.ParseError): string =>
  DecodeIssues.issuesOf(ParseResult.ArrayFormatter.formatErrorSync(error))
    .map((issue) => `  ${issue.path.length === 0 ? "" : `${issue.path.join(".")}: `}${issue.message}`)
    .join("\n")

/** The number flags, each with its option. */
const numberFlags: ReadonlyArray<readonly [NumberSetting, OptionTable.Spec<"integer" | "float">]> = [
  ["maxRounds", OptionTable.research.maxRounds],
  ["concurrency", OptionTable.research.concurrency],
  ["maxToolCalls", OptionTable.research.maxToolCalls],
  ["budgetTokens", OptionTable.research.budgetTokens],
  ["budgetUsd", OptionTable.research.budgetUsd],
  ["maxSessions", OptionTable.commands.mcp.maxSessions]
]

/** Numbers given as flags must be positive and within their bounds (the parser only checks that they are numbers). */
const checkFlagNumbers = (flags: Flags): ConfigError | undefined => {
  for (const [key, option] of numberFlags) {
    const value = flags[key]
    const problem =
      typeof value === "number" ? numberProblem(OptionTable.flagOf(option), key, value, String(value)) : undefined
    if (problem !== undefined) return new ConfigError({ message: problem })
  }
  return undefined
}

/** Decodes a config file's text; errors name the file. */
export const decodeFileConfig = (text: string, path: string): Either.Either<FileConfig, ConfigError> =>
  Schema.decodeUnknownEither(Schema.parseJson(FileConfig), { onExcessProperty: "error", errors: "all" })(text).pipe(
    Either.mapLeft((error) => formatIssues(error)),
    Either.filterOrLeft(
      (file) => unknownProviders(file).length === 0,
      (file) =>
        unknownProviders(file)
          .map(
            (name) =>
              `  resilience.providers.${name}: no provider goes by this name (they are ${resilienceProviders.join(", ")})`
          )
          .join("\n")
    ),
    Either.mapLeft((issues) => new ConfigError({ message: `${path} is not a valid config file:\n${issues}` }))
  )

/**
 * The providers a run of the CLI calls, by the names their resilience settings go by: the models' vendors, the search
 * APIs (`openai` and `anthropic` also name their native web search; the keyless ones included), the local corpus, and
 * `http`, the page extractor used without a Tavily key.
 */
export const resilienceProviders: ReadonlyArray<string> = [
  "openai",
  "anthropic",
  "ollama",
  "tavily",
  "exa",
  "perplexity",
  "semantic-scholar",
  ...Keyless.Backend.literals,
  "local",
  "http"
]

/** The names of `resilience.providers` no provider goes by: a typo there would change nothing, so it is refused. */
const unknownProviders = (file: FileConfig): ReadonlyArray<string> =>
  Object.keys(file.resilience?.providers ?? {}).filter((name) => !resilienceProviders.includes(name))

/** The store folder: `--store`, else `DEEP_RESEARCH_HOME`, else the config file's `store`, else `~/.deep-research`. */
export const storeDirOf = (flag: string | undefined, env: Environment, file: FileConfig | undefined): string =>
  Variables.storeFolder([flag, env[Variables.home], file?.store], homeOf(env))

/** The model of each role that flags, environment or the config file name. */
const roleModelsOf = (flags: Flags, env: Environment, file: FileConfig | undefined) => {
  const roleModels: Partial<Record<Usage.Role, string>> = {}
  for (const role of Usage.roles) {
    const spec = first(
      flags.modelRoles?.[role],
      nonEmpty(env[`DEEP_RESEARCH_MODEL_${role.toUpperCase()}`]),
      file?.models?.[role]
    )
    if (spec !== undefined) roleModels[role] = spec
  }
  return roleModels
}

/** The numeric settings, each from its flag, else its environment variable, else the config file. */
const numbersOf = (flags: Flags, env: Environment, file: FileConfig | undefined) =>
  Either.gen(function* () {
    const maxRounds = first(
      flags.maxRounds,
      yield* envNumber(env, "DEEP_RESEARCH_MAX_ROUNDS", "maxRounds"),
      file?.maxRounds
    )
    const concurrency = first(
      flags.concurrency,
      yield* envNumber(env, "DEEP_RESEARCH_CONCURRENCY", "concurrency"),
      file?.concurrency
    )
    const maxToolCalls = first(
      flags.maxToolCalls,
      yield* envNumber(env, "DEEP_RESEARCH_MAX_TOOL_CALLS", "maxToolCalls"),
      file?.maxToolCalls
    )
    const budgetTokens = first(
      flags.budgetTokens,
      yield* envNumber(env, "DEEP_RESEARCH_BUDGET_TOKENS", "budgetTokens"),
      file?.budgetTokens
    )
    const budgetUsd = first(
      flags.budgetUsd,
      yield* envNumber(env, "DEEP_RESEARCH_BUDGET_USD", "budgetUsd"),
      file?.budgetUsd
    )
    const maxSessions = first(
      flags.maxSessions,
      yield* envNumber(env, "DEEP_RESEARCH_MAX_SESSIONS", "maxSessions"),
      file?.maxSessions
    )
    return { maxRounds, concurrency, maxToolCalls, budgetTokens, budgetUsd, maxSessions }
  })

/**
 * The research settings: the config file's `research` with what flags, environment and the file's own shorthands say
 * over it, decoded within their bounds.
 */
const researchOf = (
  flags: Flags,
  file: FileConfig | undefined,
  numbers: Either.Either.Right<ReturnType<typeof numbersOf>>,
  askClarification: boolean
) => {
  const { budgetTokens, budgetUsd, concurrency, maxRounds, maxToolCalls } = numbers
  const encoded: Record<string, unknown> = { ...(file?.research ?? {}) }
  if (!askClarification && !("allowClarification" in encoded)) encoded["allowClarification"] = false
  if (flags.requireSources === true || file?.requireSources !== undefined) {
    encoded["requireSources"] = flags.requireSources === true || file?.requireSources === true
  }
  if (flags.noVerify === true || file?.verify !== undefined) {
    encoded["verify"] = flags.noVerify !== true && file?.verify !== false
  }
  Object.assign(encoded, steeringOf(flags, file))
  const shape = shapeOf(flags, file)
  if (Either.isLeft(shape)) return Either.left(new ConfigError({ message: shape.left }))
  Object.assign(encoded, shape.right)
  if (maxRounds !== undefined) encoded["maxSupervisionRounds"] = maxRounds
  if (concurrency !== undefined) encoded["maxConcurrentResearchUnits"] = concurrency
  if (maxToolCalls !== undefined) encoded["researcherMaxToolCalls"] = maxToolCalls
  if (budgetTokens !== undefined || budgetUsd !== undefined) {
    const budget: Record<string, unknown> = {}
    const fileBudget = file?.research?.["budget"]
    if (typeof fileBudget === "object" && fileBudget !== null) Object.assign(budget, fileBudget)
    if (budgetTokens !== undefined) budget["maxTokens"] = budgetTokens
    if (budgetUsd !== undefined) budget["maxUsd"] = budgetUsd
    encoded["budget"] = budget
  }
  const decoded = Schema.decodeUnknownEither(ResearchConfig.Bounded, { onExcessProperty: "error", errors: "all" })(
    encoded
  )
  const where = `flags, DEEP_RESEARCH_* or the config file's "research"`
  return Either.mapLeft(
    decoded,
    (error) => new ConfigError({ message: `Invalid research settings (${where}):\n${formatIssues(error)}` })
  )
}

/** Resolves flags, environment and the config file into what a run needs. */
export const resolve = (
  flags: Flags,
  env: Environment,
  file: FileConfig | undefined,
  purpose: Purpose = "research"
): Either.Either<Resolved, ConfigError> =>
  Either.gen(function* () {
    const simulate = flags.simulate === true
    const fromEnv = credentialsFrom(env)
    const credentials: Credentials =
      flags.database === undefined ? fromEnv : { ...fromEnv, databaseUrl: Redacted.make(flags.database) }
    const badNumber = checkFlagNumbers(flags)
    if (badNumber !== undefined) return yield* Either.left(badNumber)

    const corpus = first(flags.corpus, nonEmpty(env["DEEP_RESEARCH_CORPUS"]), file?.corpus)
    const { models, search, searchDefaulted } = yield* resolveBackends({
      purpose,
      simulate,
      credentials,
      corpus,
      search: first<string | ReadonlyArray<string>>(flags.search, nonEmpty(env["DEEP_RESEARCH_SEARCH"]), file?.search),
      model: first(flags.model, nonEmpty(env["DEEP_RESEARCH_MODEL"]), file?.model),
      roleModels: roleModelsOf(flags, env, file)
    })
    const numbers = yield* numbersOf(flags, env, file)
    // Clarification off (`--no-clarify`, `clarify: false`) skips the phase: no model call is made for a question
    // that will not be asked. A file's `research.allowClarification` says otherwise only when it says so itself.
    const askClarification = flags.noClarify !== true && file?.clarify !== false
    const research = yield* researchOf(flags, file, numbers, askClarification)

    return {
      models,
      search,
      searchDefaulted,
      corpus: corpus === undefined ? undefined : expandHome(corpus, env),
      storeDir: storeDirOf(flags.store, env, file),
      research,
      out: flags.out,
      askClarification,
      json: flags.json === true,
      simulate,
      maxSessions: numbers.maxSessions,
      resilience: file?.resilience ?? Resilience.defaultSettings,
      credentials
    }
  })

/** Lifts a resolution failure into an Effect. */
export const resolveEffect = (
  flags: Flags,
  env: Environment,
  file: FileConfig | undefined,
  purpose: Purpose = "research"
): Effect.Effect<Resolved, ConfigError> =>
  Either.match(resolve(flags, env, file, purpose), { onLeft: Effect.fail, onRight: Effect.succeed })
