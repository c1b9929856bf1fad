/**
 * OpenAlex works search (`GET /works?search=`) as a `SearchProvider`: scholarly works of every field with their title,
 * abstract (rebuilt from `abstract_inverted_index`, the form OpenAlex gives it in), authors, year, venue, DOI and
 * open-access link; a preprint is marked as one. `OPENALEX_API_KEY` (free) is sent as `api_key`, and `mailto`
 * (`OPENALEX_EMAIL`) names who to contact.
 *
 * As documented at developers.openalex.org: the work object (`id`, `doi`, `display_name`, `publication_year`,
 * `publication_date`, `type`, `authorships[].author.display_name`, `primary_location.source`,
 * `primary_location.version`, `open_access.oa_url`, `best_oa_location`, `abstract_inverted_index`), `select`,
 * `per_page`, `filter=from_publication_date:`; "Authentication & Pricing" ("API key required starting February 13,
 * 2026"; a daily allowance in dollars, $0.01 without a key and $1 with a free one, a search costing $1 per 1,000: ten
 * searches a day without a key, a thousand with one; its older page says 100 credits without a key; at most 100
 * requests a second for everyone), the rate-limit headers (`X-RateLimit-Limit`, `X-RateLimit-Remaining`: what is left
 * of today's allowance, `X-RateLimit-Credits-Used`, `X-RateLimit-Reset`), and "Error Handling" (`{"error",
 * "message"}`; 403 "Rate limit exceeded; slow down", 429 "Daily limit exceeded", 5xx to retry with backoff). So a 403 is
 * a rate limit waited out, a 429 the day's allowance spent: OpenAlex is skipped until it is renewed (the reset the
 * headers give, else midnight UTC), and an answer that says none is left skips it before it is refused. Without a key
 * it is out of the default keyless set (`Keyless.ts`): its allowance is not one run's searches.
 */
import { Errors, Resilience, SearchProvider, Source } from "@deep-research/core"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Http from "./keyless/http.js"
import * as Identity from "./keyless/identity.js"
import { collapse, type Paper, toSearchResults } from "./keyless/scholarly.js"
import { errorDetail, type HeaderRecord, retryAfterOf } from "./searchHttp.js"

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

/** The fields of a works-search answer this provider reads; each work is decoded on its own (`Http.decodeItems`). */
export const SearchResponse = Schema.Struct({
  meta: Schema.optional(Schema.Struct({ count: Schema.optional(Schema.Number) })),
  results: Schema.Array(Schema.Unknown)
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

  // Until when the day's allowance is spent, once an answer said so: no request is sent before then.
  const spent = Ref.unsafeMake<QuotaExhaustedError | undefined>(undefined)

  const search = Effect.fn("OpenAlex.search")(function* (query: string, searchOptions: SearchProvider.SearchOptions) {
    const now = yield* Clock.currentTimeMillis
    const known = yield* Ref.get(spent)
    if (known?.until !== undefined && known.until > now) return yield* Effect.fail(known)
    const url = `${baseUrl}/works?${searchParams(query, searchOptions, now, identity).toString()}`
    const answer = yield* Http.get(
      { provider: name, url, headers, accept: "application/json", timeout },
      readError(name),
      options.httpClient
    ).pipe(Effect.tapError((error) => (error._tag === "ProviderQuotaExhausted" ? Ref.set(spent, error) : Effect.void)))
    if (allowanceLeft(answer.headers) === 0) yield* Ref.set(spent, allowanceSpent(name, answer.headers, now))
    const response = yield* Http.decodeJson(SearchResponse, name, answer)
    const wanted = response.results.slice(0, Math.max(0, searchOptions.maxResults))
    const { decoded: works } = yield* Http.decodeItems(Work, wanted)
    return toSearchResults(works.map(paperOf), name)
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

type QuotaExhaustedError = Errors.ProviderQuotaExhausted

const keyProblem = /api[ _-]?key|invalid key|unauthori[sz]ed/i
const dailyLimit = /daily|per day|allowance/i

/** What is left of today's allowance (`X-RateLimit-Remaining`), when the answer says. */
export const allowanceLeft = (headers: HeaderRecord): number | undefined => {
  const left = Number(headers["x-ratelimit-remaining"] ?? "")
  return headers["x-ratelimit-remaining"] === undefined || !Number.isFinite(left) ? undefined : Math.max(0, left)
}

const nextUtcMidnight = (now: number): number => {
  const day = new Date(now)
  return Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate() + 1)
}

/**
 * When the allowance is renewed: `X-RateLimit-Reset` (seconds from now, epoch seconds or a date, as it comes), else the
 * next midnight UTC, when OpenAlex's days begin.
 */
export const renewedAt = (headers: HeaderRecord, now: number): number => {
  const reset = headers["x-ratelimit-reset"]?.trim() ?? ""
  const number = Number(reset)
  if (reset !== "" && Number.isFinite(number) && number > 0) {
    return number > 1_000_000_000 ? number * 1000 : now + number * 1000
  }
  const date = Date.parse(reset)
  return Number.isFinite(date) && date > now ? date : nextUtcMidnight(now)
}

/** The day's allowance spent: OpenAlex out of reach until it is renewed. */
export const allowanceSpent = (provider: string, headers: HeaderRecord, now: number): Errors.ProviderQuotaExhausted => {
  const limit = headers["x-ratelimit-limit"]
  return new Errors.ProviderQuotaExhausted({
    provider,
    until: renewedAt(headers, now),
    detail: `its daily allowance is spent${limit === undefined ? "" : ` (${limit} a day)`}; set OPENALEX_API_KEY for a larger one`
  })
}

/**
 * A non-2xx answer, as "Error Handling" tabulates them: a refused key is an authentication failure; a 403 is the rate
 * ("slow down": its `Retry-After`, else a second); a 429 is the daily limit, unless it says how soon to come back
 * (`Retry-After`) or that allowance is left (`X-RateLimit-Remaining`), which is the rate per second.
 */
const readError =
  (provider: string): Http.ErrorReading =>
  (answer, now) => {
    if (answer.status !== 403 && answer.status !== 429) return undefined
    const detail = errorDetail(answer.text)
    if (keyProblem.test(`${detail} ${answer.text}`))
      return new Errors.ProviderAuthenticationFailed({ provider, detail })
    const retryAfter = retryAfterOf(answer.headers, now)
    const rate = new Errors.ProviderRateLimited({ provider, retryAfter: retryAfter ?? Duration.seconds(1) })
    if (answer.status === 403) return rate
    const left = allowanceLeft(answer.headers)
    const spent = left === 0 || dailyLimit.test(detail)
    return !spent && (retryAfter !== undefined || (left !== undefined && left > 0))
      ? rate
      : allowanceSpent(provider, answer.headers, now)
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
