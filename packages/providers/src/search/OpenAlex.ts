/**
 * OpenAlex works search (`GET /works?search=`) as a `SearchProvider`: scholarly works of every field with their title,
 * abstract (rebuilt from `abstract_inverted_index`, the form OpenAlex gives it in), authors, year, venue, DOI and
 * open-access link; a preprint is marked as one. No key is needed: a keyless client gets a small daily allowance, an
 * `api_key` (free, `OPENALEX_API_KEY`) a larger one, and `mailto` (`OPENALEX_EMAIL`) names who to contact, as the
 * polite pool asks.
 *
 * As documented at developers.openalex.org and docs.openalex.org: the work object (`id`, `doi`, `display_name`,
 * `publication_year`, `publication_date`, `type`, `authorships[].author.display_name`, `primary_location.source`,
 * `primary_location.version`, `open_access.oa_url`, `best_oa_location`, `abstract_inverted_index`), `select`,
 * `per_page`, `filter=from_publication_date:`; "Authentication & Pricing" (a daily allowance per client, every client
 * at most 100 requests a second, searches the costliest list calls) and "Error Handling" (`{"error", "message"}`;
 * 403 and 429 for a rate or a daily limit exceeded, 5xx to retry with backoff). A daily limit is the quota being
 * spent; a rate limit is waited out.
 */
import { Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Http from "./keyless/http.js"
import * as Identity from "./keyless/identity.js"
import { collapse, type Paper, toSearchResults } from "./keyless/scholarly.js"
import { errorDetail, retryAfterOf } from "./searchHttp.js"

// =============================================================================
// Options
// =============================================================================

/** How to build the OpenAlex search provider. */
export interface Options {
  /** e.g. `http://127.0.0.1:8080/openalex`. Defaults to OpenAlex's API. */
  readonly baseUrl?: string | undefined
  /** Sent as `mailto`: the polite pool's contact address. */
  readonly email?: string | undefined
  /** Optional (`api_key`): without one, the keyless daily allowance applies. */
  readonly apiKey?: Redacted.Redacted | undefined
  /** Who runs this client (an e-mail address or a URL), written into the `User-Agent`; `mailto` when no email. */
  readonly contact?: string | undefined
  /** Time limit of one request; 30 s by default. */
  readonly timeout?: Duration.DurationInput | undefined
  /** The name recorded on results and errors; `openalex` by default. */
  readonly name?: string | undefined
  /** The HTTP client of its requests: the platform's fetch client by default. */
  readonly httpClient?: HttpClient.HttpClient | undefined
}

/** The API. */
export const defaultBaseUrl = "https://api.openalex.org"

/**
 * The default policy (`Resilience.Settings.providers.openalex`): OpenAlex allows every client 100 requests a second;
 * a research run asks far less, five a second, growing to ten.
 */
export const policy: Resilience.PolicyOverrides = new Resilience.PolicyOverrides({
  requestsPerSecond: 5,
  burst: 5,
  maxRequestsPerSecond: 10
})

/** The work fields requested. */
export const fields =
  "id,doi,display_name,publication_year,publication_date,type,authorships,primary_location,best_oa_location,open_access,abstract_inverted_index"

const maxResultsPerSearch = 50

// =============================================================================
// Wire format
// =============================================================================

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))

const Location = Schema.Struct({
  landing_page_url: OptionalText,
  pdf_url: OptionalText,
  version: OptionalText,
  source: Schema.optional(Schema.NullOr(Schema.Struct({ display_name: OptionalText, type: OptionalText })))
})

/** One work, as far as this provider reads it. */
export const Work = Schema.Struct({
  id: Schema.String,
  doi: OptionalText,
  display_name: OptionalText,
  publication_year: Schema.optional(Schema.NullOr(Schema.Number)),
  publication_date: OptionalText,
  type: OptionalText,
  authorships: Schema.optionalWith(
    Schema.Array(Schema.Struct({ author: Schema.optional(Schema.Struct({ display_name: OptionalText })) })),
    { default: () => [] }
  ),
  primary_location: Schema.optional(Schema.NullOr(Location)),
  best_oa_location: Schema.optional(Schema.NullOr(Location)),
  open_access: Schema.optional(Schema.NullOr(Schema.Struct({ oa_url: OptionalText }))),
  abstract_inverted_index: Schema.optional(
    Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Array(Schema.Number) }))
  )
})
export type Work = typeof Work.Type

/** The fields of a works-search answer this provider reads. */
export const SearchResponse = Schema.Struct({
  meta: Schema.optional(Schema.Struct({ count: Schema.optional(Schema.Number) })),
  results: Schema.Array(Work)
})

// =============================================================================
// Constructors
// =============================================================================

/** Builds the search provider. */
export const make = (options: Options = {}): SearchProvider.Service => {
  const name = options.name ?? "openalex"
  const baseUrl = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "")
  const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
  const headers = { "user-agent": Identity.userAgent(options.contact ?? options.email) }
  const identity = {
    email: options.email ?? Identity.emailOf(options.contact),
    apiKey: options.apiKey === undefined ? undefined : Redacted.value(options.apiKey)
  }

  const search = Effect.fn("OpenAlex.search")(function* (query: string, searchOptions: SearchProvider.SearchOptions) {
    const now = yield* Clock.currentTimeMillis
    const url = `${baseUrl}/works?${searchParams(query, searchOptions, now, identity).toString()}`
    const answer = yield* Http.get(
      { provider: name, url, headers, accept: "application/json", timeout },
      readError(name),
      options.httpClient
    )
    const response = yield* Http.decodeJson(SearchResponse, name, answer)
    return toSearchResults(response.results.slice(0, Math.max(0, searchOptions.maxResults)).map(paperOf), name)
  })

  return { name, search }
}

/** OpenAlex as the `SearchProvider` in context. */
export const layer = (options: Options = {}): Layer.Layer<SearchProvider.SearchProvider> =>
  Layer.succeed(SearchProvider.SearchProvider, make(options))

// =============================================================================
// Requests
// =============================================================================

const dayMillis = 24 * 60 * 60 * 1000
const rangeDays: Readonly<Record<NonNullable<SearchProvider.SearchOptions["timeRange"]>, number>> = {
  day: 1,
  week: 7,
  month: 31,
  year: 366
}

/** The query string of a works search; a time range becomes a `from_publication_date` filter. */
export const searchParams = (
  query: string,
  options: SearchProvider.SearchOptions,
  now: number,
  identity: { readonly email?: string | undefined; readonly apiKey?: string | undefined } = {}
): URLSearchParams => {
  const params = new URLSearchParams({
    search: query,
    per_page: String(Math.max(1, Math.min(maxResultsPerSearch, options.maxResults))),
    select: fields
  })
  // A date window (a source policy's) is sent as publication-date filters, in place of a recent time range.
  const dates = [
    ...(options.since !== undefined ? [`from_publication_date:${options.since}`] : []),
    ...(options.until !== undefined ? [`to_publication_date:${options.until}`] : [])
  ]
  if (dates.length > 0) params.set("filter", dates.join(","))
  else if (options.timeRange !== undefined) {
    const from = new Date(now - rangeDays[options.timeRange] * dayMillis).toISOString().slice(0, 10)
    params.set("filter", `from_publication_date:${from}`)
  }
  if (identity.email !== undefined) params.set("mailto", identity.email)
  if (identity.apiKey !== undefined) params.set("api_key", identity.apiKey)
  return params
}

// =============================================================================
// Errors
// =============================================================================

const dailyLimit = /daily|per day|allowance|credits|budget|usage limit/i
const keyProblem = /api[ _-]?key|invalid key|unauthori[sz]ed/i

/**
 * A non-2xx answer, as "Error Handling" describes them: 403 and 429 are a limit, the daily allowance (the quota, not
 * retried) when the message says so, else the rate (waited out: its `Retry-After`, else a second); a refused key is
 * an authentication failure.
 */
const readError =
  (provider: string): Http.ErrorReading =>
  (answer, now) => {
    if (answer.status !== 403 && answer.status !== 429) return undefined
    const detail = errorDetail(answer.text)
    const message = `${detail} ${answer.text}`
    if (keyProblem.test(message)) return new Errors.AuthenticationFailed({ provider, detail })
    if (dailyLimit.test(message)) return new Errors.QuotaExhausted({ provider })
    return new Errors.RateLimited({ provider, retryAfter: retryAfterOf(answer.headers, now) ?? Duration.seconds(1) })
  }

// =============================================================================
// Mapping
// =============================================================================

/** The abstract, rebuilt from its inverted index (each word at its positions). */
export const abstractOf = (index: Readonly<Record<string, ReadonlyArray<number>>> | null | undefined): string => {
  if (index === null || index === undefined) return ""
  const words: Array<string> = []
  for (const [word, positions] of Object.entries(index)) {
    for (const position of positions) {
      if (Number.isInteger(position) && position >= 0 && position < 100_000) words[position] = word
    }
  }
  return collapse(words.filter((word) => word !== undefined).join(" "))
}

const text = (value: string | null | undefined): string | undefined =>
  typeof value === "string" && value.trim() !== "" ? value.trim() : undefined

/** Posted content, or a submitted version in a repository, has not been through peer review. */
const isPreprint = (work: Work): boolean =>
  work.type === "preprint" ||
  work.type === "posted-content" ||
  (work.primary_location?.version === "submittedVersion" && work.primary_location.source?.type === "repository")

/** One work as a paper: its DOI as the link where it has one, its open-access copy as the full text. */
export const paperOf = (work: Work): Paper => {
  const doi = text(work.doi)
  const url = doi ?? text(work.primary_location?.landing_page_url) ?? work.id
  const year = work.publication_year
  const venue = text(work.primary_location?.source?.display_name)
  return {
    url,
    title: collapse(text(work.display_name) ?? ""),
    abstract: abstractOf(work.abstract_inverted_index),
    work: new Source.Work({
      authors: work.authorships.flatMap((authorship) => text(authorship.author?.display_name) ?? []),
      ...(typeof year === "number" && Number.isInteger(year) ? { year } : {}),
      ...(venue !== undefined ? { venue } : {}),
      ...(doi !== undefined ? { doi: doi.replace(/^https?:\/\/(dx\.)?doi\.org\//, "") } : {}),
      preprint: isPreprint(work)
    }),
    publishedDate: text(work.publication_date) ?? (typeof year === "number" ? String(year) : undefined),
    fullText:
      text(work.open_access?.oa_url) ??
      text(work.best_oa_location?.pdf_url) ??
      text(work.best_oa_location?.landing_page_url)
  }
}
