/**
 * The vendors' keys and endpoints, the database and the API token a configuration has, read from the environment only (`CliConfig.credentialsFrom`):
 * what the backends of a configuration are checked against, and what the wiring hands the vendors' layers. With the
 * places the environment names (home, config files), apart from `CliConfig` so that the store's commands load little.
 */
import * as Variables from "@deep-research/providers/Environment"
import * as Keyless from "@deep-research/providers/Keyless"
import * as Secrets from "@deep-research/providers/Secrets"
import * as Redacted from "effect/Redacted"

/** Vendor credentials and endpoints, from the environment only. */
export interface Credentials {
  readonly openaiApiKey: Redacted.Redacted<string> | undefined
  readonly openaiBaseUrl: string | undefined
  readonly anthropicApiKey: Redacted.Redacted<string> | undefined
  readonly anthropicBaseUrl: string | undefined
  readonly tavilyApiKey: Redacted.Redacted<string> | undefined
  readonly tavilyBaseUrl: string | undefined
  readonly exaApiKey: Redacted.Redacted<string> | undefined
  readonly exaBaseUrl: string | undefined
  readonly perplexityApiKey: Redacted.Redacted<string> | undefined
  readonly perplexityBaseUrl: string | undefined
  readonly semanticScholarApiKey: Redacted.Redacted<string> | undefined
  readonly semanticScholarBaseUrl: string | undefined
  readonly ollamaBaseUrl: string | undefined
  /** The keyless search APIs: base URLs, the optional keys and addresses that raise their limits, the contact. */
  readonly keyless: Keyless.Settings
  /** The PostgreSQL database of a cluster (`--database` or `DEEP_RESEARCH_DATABASE_URL`); it may hold a password. */
  readonly databaseUrl: Redacted.Redacted<string> | undefined
  /** The token `deep-research serve` asks of its clients (`DEEP_RESEARCH_API_TOKEN`): a secret like the keys. */
  readonly apiToken: Redacted.Redacted<string> | undefined
}

type Environment = Readonly<Record<string, string | undefined>>

/** A variable's value, trimmed; undefined when unset or blank. */
export const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value.trim()

/** A variable's value as a secret. */
export const redactedEnv = (env: Environment, name: string): Redacted.Redacted<string> | undefined => {
  const value = nonEmpty(env[name])
  return value === undefined ? undefined : Redacted.make(value)
}

/** Reads credentials and base URLs from the environment. */
export const credentialsFrom = (env: Environment): Credentials => ({
  openaiApiKey: redactedEnv(env, Variables.openaiApiKey),
  openaiBaseUrl: nonEmpty(env[Variables.openaiBaseUrl]),
  anthropicApiKey: redactedEnv(env, Variables.anthropicApiKey),
  anthropicBaseUrl: nonEmpty(env[Variables.anthropicBaseUrl]),
  tavilyApiKey: redactedEnv(env, Variables.tavilyApiKey),
  tavilyBaseUrl: nonEmpty(env[Variables.tavilyBaseUrl]),
  exaApiKey: redactedEnv(env, Variables.exaApiKey),
  exaBaseUrl: nonEmpty(env[Variables.exaBaseUrl]),
  perplexityApiKey: redactedEnv(env, Variables.perplexityApiKey),
  perplexityBaseUrl: nonEmpty(env[Variables.perplexityBaseUrl]),
  semanticScholarApiKey: redactedEnv(env, Variables.semanticScholarApiKey),
  semanticScholarBaseUrl: nonEmpty(env[Variables.semanticScholarBaseUrl]),
  ollamaBaseUrl: nonEmpty(env[Variables.ollamaBaseUrl]),
  keyless: Keyless.settingsFrom(env),
  databaseUrl: redactedEnv(env, Variables.databaseUrl),
  apiToken: redactedEnv(env, Variables.apiToken)
})

/** The user's home folder. */
export const homeOf = (env: Environment): string => nonEmpty(env["HOME"]) ?? nonEmpty(env["USERPROFILE"]) ?? "."

/** Where config files are looked for, in order: the current folder, then the user's config folder. */
export const configFileCandidates = (cwd: string, env: Environment): ReadonlyArray<string> => {
  const configHome = nonEmpty(env["XDG_CONFIG_HOME"]) ?? `${homeOf(env)}/.config`
  return [`${cwd}/deep-research.config.json`, `${configHome}/deep-research/deep-research.config.json`]
}
/**
 * Every secret of the credentials, the keyless APIs' optional keys included: each `Redacted` text, however deep, and
 * each of the API tokens when it holds several. What the doors of the CLI and the servers keep out of what they
 * print, answer and write.
 */
/**
 * A database URL's secrets: its password (in the user info, or a `password` parameter) and the whole URL that holds
 * it. A URL without one is an address, not a secret: an operator reads it in the refusals that name the database.
 */
export const databaseSecrets = (
  url: Redacted.Redacted<string> | undefined
): ReadonlyArray<Redacted.Redacted<string>> => {
  if (url === undefined) return []
  const text = Redacted.value(url)
  let passwords: Array<string>
  try {
    const parsed = new URL(text)
    passwords = [decodeURIComponent(parsed.password), parsed.password, parsed.searchParams.get("password") ?? ""]
  } catch {
    // Not a URL (a connection string of another form): all of it, as any other credential.
    return [url]
  }
  const found = [...new Set(passwords.filter((password) => password !== ""))]
  return found.length === 0 ? [] : [url, ...found.map((password) => Redacted.make(password))]
}

export const secretsIn = (credentials: Credentials): ReadonlyArray<Redacted.Redacted<string>> => {
  const found: Array<Redacted.Redacted<string>> = []
  const walk = (value: unknown): void => {
    if (Redacted.isRedacted(value)) {
      const inner: unknown = Redacted.value(value)
      if (typeof inner === "string") found.push(Redacted.make(inner))
    } else if (typeof value === "object" && value !== null) {
      for (const inner of Object.values(value)) walk(inner)
    }
  }
  const { databaseUrl, ...rest } = credentials
  walk(rest)
  found.push(...databaseSecrets(databaseUrl))
  // The API token may hold several, one for each caller: each is a secret of its own.
  const tokens = credentials.apiToken === undefined ? [] : Redacted.value(credentials.apiToken).split(",")
  for (const part of tokens.length > 1 ? tokens : []) found.push(Redacted.make(part.trim()))
  return found
}

/** A text (a question, an answer, a report) without the credentials' secrets: `[redacted]` in their place. */
export const withoutSecrets = (credentials: Credentials, text: string): string =>
  Secrets.scrubber(secretsIn(credentials))(text)
