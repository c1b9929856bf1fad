/**
 * The environment variables the providers, the stores and the CLI read, each named here once, and the store folder
 * they resolve to. The vendors' layers read their keys and base URLs through `Config` under these names, the CLI
 * reads the same names from its environment, the stores keep the values of `secretVariables` out of every file, and
 * the help names them from here.
 */
import * as nodePath from "node:path"

// =============================================================================
// Variables
// =============================================================================

export const openaiApiKey = "OPENAI_API_KEY"
export const openaiBaseUrl = "OPENAI_BASE_URL"
export const anthropicApiKey = "ANTHROPIC_API_KEY"
export const anthropicBaseUrl = "ANTHROPIC_BASE_URL"
export const tavilyApiKey = "TAVILY_API_KEY"
export const tavilyBaseUrl = "TAVILY_BASE_URL"
export const exaApiKey = "EXA_API_KEY"
export const exaBaseUrl = "EXA_BASE_URL"
export const perplexityApiKey = "PERPLEXITY_API_KEY"
export const perplexityBaseUrl = "PERPLEXITY_BASE_URL"
export const semanticScholarApiKey = "SEMANTIC_SCHOLAR_API_KEY"
export const semanticScholarBaseUrl = "SEMANTIC_SCHOLAR_BASE_URL"
export const ollamaBaseUrl = "OLLAMA_BASE_URL"
/** The keyless search APIs: base URLs, the optional keys and addresses that raise their limits, and a contact. */
export const wikipediaBaseUrl = "WIKIPEDIA_BASE_URL"
export const wikipediaLanguage = "WIKIPEDIA_LANGUAGE"
export const arxivBaseUrl = "ARXIV_BASE_URL"
export const openalexBaseUrl = "OPENALEX_BASE_URL"
export const openalexEmail = "OPENALEX_EMAIL"
export const openalexApiKey = "OPENALEX_API_KEY"
export const pubmedBaseUrl = "PUBMED_BASE_URL"
export const ncbiApiKey = "NCBI_API_KEY"
export const searxngUrl = "SEARXNG_URL"
/** Who runs this deep-research (an e-mail address or a URL): the keyless APIs ask clients for one. */
export const contact = "DEEP_RESEARCH_CONTACT"
/** The PostgreSQL database of a cluster; its URL may hold a password. */
export const databaseUrl = "DEEP_RESEARCH_DATABASE_URL"
/** The token `deep-research serve` asks of its API clients. */
export const apiToken = "DEEP_RESEARCH_API_TOKEN"
/** The store folder. */
export const home = "DEEP_RESEARCH_HOME"

/** The variables whose values are secrets: the stores keep them out of every file they write. */
export const secretVariables: ReadonlyArray<string> = [
  openaiApiKey,
  anthropicApiKey,
  tavilyApiKey,
  exaApiKey,
  perplexityApiKey,
  semanticScholarApiKey,
  openalexApiKey,
  ncbiApiKey,
  databaseUrl,
  apiToken
]

// =============================================================================
// The store folder
// =============================================================================

/** The store folder when nothing names one. */
export const defaultHome = "~/.deep-research"

/** A leading `~` is the user's home folder, as a shell would have it had the value not been quoted. */
export const expandHome = (folder: string, homeDirectory: string): string =>
  folder === "~" || folder.startsWith("~/") || folder.startsWith("~\\") ? homeDirectory + folder.slice(1) : folder

/** The store folder: the first of the given choices that is set (`~` expanded), else `~/.deep-research`. */
export const storeFolder = (choices: ReadonlyArray<string | undefined>, homeDirectory: string): string =>
  expandHome(
    choices.find((choice) => choice !== undefined && choice.trim() !== "")?.trim() ?? defaultHome,
    homeDirectory
  )

/** The folder of the file store's sessions inside a store folder (beside it: the corpus index, the config). */
export const sessionsFolder = (store: string): string => nodePath.join(store, "sessions")

/** A database URL as it may be shown: without its password; unreadable ones are said to be. */
export const describeDatabaseUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    parsed.password = ""
    return parsed.toString()
  } catch {
    return "(an unreadable database URL)"
  }
}
