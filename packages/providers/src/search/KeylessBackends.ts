/**
 * The keyless search backends as plain data: their names, what each is good for, and the default set in its order.
 * No Effect here, so the command line's help can name them without loading it; `Keyless.ts` builds on it.
 */

/** The keyless search backends, by the names `--search` and the config file take. */
export const names = ["searxng", "wikipedia", "openalex", "arxiv", "pubmed"] as const
export type Name = (typeof names)[number]

/** What each backend is good for. */
export const descriptions: Readonly<Record<Name, string>> = {
  searxng: "the open web, through your own SearXNG instance (SEARXNG_URL)",
  wikipedia: "overviews, definitions, history and context, in the question's language",
  openalex: "scholarly works of every field with abstracts, years and venues, preprints marked (OPENALEX_API_KEY)",
  arxiv: "the latest preprints in physics, mathematics, computer science, statistics, quantitative biology",
  pubmed: "biomedical and clinical literature (MEDLINE) with structured abstracts"
}

/** The default set, in order; SearXNG is in it only when an instance is named, OpenAlex only with its key. */
export const defaultSet: ReadonlyArray<Name> = ["searxng", "wikipedia", "openalex"]
