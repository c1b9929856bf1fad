/**
 * The vendors' keys and endpoints, the database and the API token a configuration has, read from the environment only (`CliConfig.credentialsFrom`):
 * what the backends of a configuration are checked against, and what the wiring hands the vendors' layers.
 */
import type * as Keyless from "@deep-research/providers/Keyless"
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

/**
 * Every secret of the credentials, the keyless APIs' optional keys included: each `Redacted` text, however deep, and
 * each of the API tokens when it holds several. What the doors of the CLI and the servers keep out of what they
 * print, answer and write.
 */
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
  walk(credentials)
  // The API token may hold several, one for each caller: each is a secret of its own.
  const tokens = credentials.apiToken === undefined ? [] : Redacted.value(credentials.apiToken).split(",")
  for (const part of tokens.length > 1 ? tokens : []) found.push(Redacted.make(part.trim()))
  return found
}

/** A text (a question, an answer, a report) without the credentials' secrets: `[redacted]` in their place. */
export const withoutSecrets = (credentials: Credentials, text: string): string =>
  Secrets.scrubber(secretsIn(credentials))(text)
