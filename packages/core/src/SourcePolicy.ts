/**
 * The source policy of a run: the domains it may or may not use, a date window and the kinds of source it accepts.
 * Search vendors' own filters leak, so the product checks every result and every extracted page itself (`enforced`,
 * over the search provider and the content extractor in context) and records what it removed and why; the same
 * policy is pushed down to the backends that can filter (`pushdown`), so that fewer results are wasted.
 *
 * Rules, as the flags' help says them: a host matches a domain when it is that domain or one of its subdomains; a
 * result whose date is not known is removed when a date window is set (it cannot be shown to be inside it), and a date
 * known only to its year or month must lie wholly inside the window. A result's kind is known from the backend that
 * returned it and its host (see `kindOf`).
 */
import * as Schema from "effect/Schema"

// =============================================================================
// Schemas
// =============================================================================

/** The kinds of source a policy can ask for. */
export const SourceKind = Schema.Literal("academic", "news", "encyclopedia", "web", "local")
export type SourceKind = typeof SourceKind.Type

/** True when `YYYY-MM-DD` names a day of the calendar (not 2023-02-30). */
export const isCalendarDate = (text: string): boolean => {
  const [year, month, day] = text.split("-").map(Number)
  if (year === undefined || month === undefined || day === undefined) return false
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

/**
 * A day, as `YYYY-MM-DD`, compared as text. A day the calendar has not (2023-02-30) is refused where a user gives it
 * (`ResearchConfig.Bounded`); a stored session's still decodes and orders as it reads.
 */
export const Day = Schema.String.pipe(
  Schema.pattern(/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/, { message: () => "expected a date as YYYY-MM-DD" }),
  Schema.annotations({ identifier: "Day", description: "a date, YYYY-MM-DD" })
)

/** A domain as a user gives it (`example.org`; a scheme, `www.` and a path are taken off). */
export const Domain = Schema.String.pipe(
  Schema.pattern(/^[^\s,]+$/, { message: () => "expected a host name such as example.org (not empty, no spaces)" })
)

/** Why the policy removed a result or a page. */
export const RemovalReason = Schema.Literal(
  "excluded_domain",
  "outside_included_domains",
  "before_since",
  "after_until",
  "undated",
  "kind"
)
export type RemovalReason = typeof RemovalReason.Type

/** One removal: the URL and why. */
export class Removal extends Schema.Class<Removal>("@deep-research/core/SourcePolicy/Removal")({
  url: Schema.String,
  reason: RemovalReason
}) {}

const zero = Schema.optionalWith(Schema.Int, { default: () => 0 })

/** What the policy removed over a session: a count per reason (each removal), and each URL once with its reason. */
export class Removals extends Schema.Class<Removals>("@deep-research/core/SourcePolicy/Removals")({
  total: zero,
  counts: Schema.Struct({
    excluded_domain: zero,
    outside_included_domains: zero,
    before_since: zero,
    after_until: zero,
    undated: zero,
    kind: zero
  }),
  /** Each URL removed, once, with the reason it was first removed for (at most `maxListedUrls`). */
  urls: Schema.Array(Removal)
}) {}

/** URLs a session lists at most; the counts go on past it. */
export const maxListedUrls = 1_000

/** Nothing removed. */
export const noRemovals: Removals = Schema.decodeSync(Removals)({ counts: {}, urls: [] })

/** A policy, as the run's settings hold it. Every part is optional; an empty policy lets everything through. */
export interface Policy {
  readonly includeDomains: ReadonlyArray<string>
  readonly excludeDomains: ReadonlyArray<string>
  readonly since: string | undefined
  readonly until: string | undefined
  readonly sources: ReadonlyArray<SourceKind>
}

/** The policy of a run's settings. */
export const fromSettings = (settings: {
  readonly includeDomains?: ReadonlyArray<string> | undefined
  readonly excludeDomains?: ReadonlyArray<string> | undefined
  readonly since?: string | undefined
  readonly until?: string | undefined
  readonly sources?: ReadonlyArray<SourceKind> | undefined
}): Policy => ({
  includeDomains: (settings.includeDomains ?? []).map(normalizeDomain).filter((d) => d !== ""),
  excludeDomains: (settings.excludeDomains ?? []).map(normalizeDomain).filter((d) => d !== ""),
  since: settings.since,
  until: settings.until,
  sources: settings.sources ?? []
})

/** True when the policy removes anything at all. */
export const isActive = (policy: Policy): boolean =>
  policy.includeDomains.length > 0 ||
  policy.excludeDomains.length > 0 ||
  policy.since !== undefined ||
  policy.until !== undefined ||
  policy.sources.length > 0

// =============================================================================
// Hosts and kinds
// =============================================================================

/** `https://www.Example.org:8080/x` and `example.org.` are `example.org` (a host is matched whatever its port). */
export const normalizeDomain = (domain: string): string =>
  domain
    .trim()
    .toLowerCase()
    .replace(/^[a-z][a-z0-9+.-]*:\/\//, "")
    .replace(/[/?#].*$/, "")
    .replace(/:\d*$/, "")
    .replace(/^\*\./, "")
    .replace(/^www\./, "")
    .replace(/\.$/, "")

/**
 * Why a domain as a user gave it names no host a result could have (`https://`, `a..org`, `user@a.org`), or undefined
 * when it names one. Such a domain would match nothing: included, it would leave every result out; excluded, none.
 */
export const domainProblem = (domain: string): string | undefined => {
  const host = normalizeDomain(domain)
  if (host === "") return `"${domain}" names no host (expected one such as example.org)`
  return /^[^\s.:/?#@[\]]+(\.[^\s.:/?#@[\]]+)*$/u.test(host)
    ? undefined
    : `"${domain}" is not a host name (expected one such as example.org)`
}

/** The host of a URL, lower case, without `www.`; undefined for what has none (a local file). */
export const hostOf = (url: string): string | undefined => {
  const match = /^https?:\/\/(?:[^@/?#]*@)?([^/?#:]+)/i.exec(url.trim())
  const host = match?.[1]
    ?.toLowerCase()
    .replace(/^www\./, "")
    .replace(/\.$/, "")
  return host === undefined || host === "" ? undefined : host
}

/** A host matches a domain when it is the domain or one of its subdomains. */
export const matchesDomain = (host: string, domain: string): boolean => host === domain || host.endsWith(`.${domain}`)

/**
 * Whether domain lists (a search's, as the policy pushes them down) admit the page at `url`: no excluded domain holds
 * it, and an included one does when any is given. How a backend that cannot filter by domain keeps to them itself.
 */
export const admitsUrl = (
  url: string,
  domains: {
    readonly includeDomains?: ReadonlyArray<string> | undefined
    readonly excludeDomains?: ReadonlyArray<string> | undefined
  }
): boolean => {
  const host = hostOf(url)
  const on = (listed: ReadonlyArray<string>) =>
    host !== undefined && listed.some((domain) => matchesDomain(host, normalizeDomain(domain)))
  const include = domains.includeDomains ?? []
  return !on(domains.excludeDomains ?? []) && (include.length === 0 || on(include))
}

/** Backends whose every result is a scholarly work. */
const academicProviders = ["arxiv", "openalex", "pubmed", "semantic-scholar"]
/** Scholarly publishers, indexes and preprint servers. */
const academicDomains = [
  "arxiv.org",
  "doi.org",
  "openalex.org",
  "semanticscholar.org",
  "pubmed.ncbi.nlm.nih.gov",
  "ncbi.nlm.nih.gov",
  "europepmc.org",
  "biorxiv.org",
  "medrxiv.org",
  "ssrn.com",
  "jstor.org",
  "nature.com",
  "science.org",
  "sciencedirect.com",
  "springer.com",
  "wiley.com",
  "tandfonline.com",
  "sagepub.com",
  "academic.oup.com",
  "cambridge.org",
  "ieee.org",
  "acm.org",
  "aclanthology.org",
  "openreview.net",
  "plos.org",
  "frontiersin.org",
  "mdpi.com",
  "thelancet.com",
  "nejm.org",
  "bmj.com",
  "cell.com",
  "pnas.org",
  "jamanetwork.com",
  "scholar.archive.org"
]
const encyclopediaProviders = ["wikipedia"]
const encyclopediaDomains = [
  "wikipedia.org",
  "britannica.com",
  "plato.stanford.edu",
  "iep.utm.edu",
  "scholarpedia.org",
  "encyclopedia.com"
]
const newsDomains = [
  "reuters.com",
  "apnews.com",
  "afp.com",
  "bbc.com",
  "bbc.co.uk",
  "nytimes.com",
  "washingtonpost.com",
  "wsj.com",
  "ft.com",
  "bloomberg.com",
  "theguardian.com",
  "economist.com",
  "cnn.com",
  "npr.org",
  "aljazeera.com",
  "politico.com",
  "axios.com",
  "theverge.com",
  "arstechnica.com",
  "techcrunch.com",
  "wired.com",
  "lemonde.fr",
  "spiegel.de",
  "zeit.de",
  "faz.net",
  "elpais.com",
  "nikkei.com",
  "scmp.com",
  "cbc.ca",
  "abc.net.au",
  "news.ycombinator.com"
]

/** What a result is enough to tell its kind by. */
export interface Described {
  readonly url: string
  readonly provider: string
  readonly publishedDate?: string | undefined
  readonly work?: { readonly year?: number | undefined } | undefined
}

/**
 * A result's kind: `academic` when a scholarly backend returned it, it carries a work's bibliographic facts or its
 * host is a scholarly publisher or index; `encyclopedia` from Wikipedia or an encyclopedia's host; `news` from a news
 * outlet's host; `local` from the local corpus (no web host); `web` otherwise.
 */
export const kindOf = (result: Described): SourceKind => {
  const host = hostOf(result.url)
  const on = (domains: ReadonlyArray<string>) => host !== undefined && domains.some((d) => matchesDomain(host, d))
  if (academicProviders.includes(result.provider) || result.work !== undefined || on(academicDomains)) {
    return "academic"
  }
  if (encyclopediaProviders.includes(result.provider) || on(encyclopediaDomains)) return "encyclopedia"
  if (on(newsDomains)) return "news"
  if (host === undefined) return "local"
  return "web"
}

// =============================================================================
// Dates
// =============================================================================

/** The first and last day a date may stand for (a year-only date stands for the whole year). */
export interface Span {
  readonly first: string
  readonly last: string
}

const pad = (n: number): string => String(n).padStart(2, "0")
const lastDayOf = (year: number, month: number): number => new Date(Date.UTC(year, month, 0)).getUTCDate()

/** The span a published date stands for, or undefined when it says no date. */
export const spanOf = (result: Described): Span | undefined => {
  const text = result.publishedDate?.trim() ?? ""
  const partial = /^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:$|[T\s])/.exec(text)
  if (partial !== null) {
    const year = Number(partial[1])
    const month = partial[2] === undefined ? undefined : Number(partial[2])
    const day = partial[3] === undefined ? undefined : Number(partial[3])
    if (month === undefined) return { first: `${year}-01-01`, last: `${year}-12-31` }
    if (month < 1 || month > 12) return undefined
    if (day === undefined)
      return { first: `${year}-${pad(month)}-01`, last: `${year}-${pad(month)}-${pad(lastDayOf(year, month))}` }
    const one = `${year}-${pad(month)}-${pad(day)}`
    return isCalendarDate(one) ? { first: one, last: one } : undefined
  }
  const parsed = text === "" ? Number.NaN : Date.parse(text)
  if (!Number.isNaN(parsed)) {
    const one = new Date(parsed).toISOString().slice(0, 10)
    return { first: one, last: one }
  }
  const year = result.work?.year
  return year === undefined ? undefined : { first: `${year}-01-01`, last: `${year}-12-31` }
}

// =============================================================================
// The check
// =============================================================================

/** Why `policy` removes a result, or undefined when it keeps it. `span` stands in for a date the result lacks. */
export const check = (policy: Policy, result: Described, known?: Span): RemovalReason | undefined => {
  const host = hostOf(result.url)
  if (host !== undefined && policy.excludeDomains.some((d) => matchesDomain(host, d))) return "excluded_domain"
  if (
    policy.includeDomains.length > 0 &&
    (host === undefined || !policy.includeDomains.some((d) => matchesDomain(host, d)))
  ) {
    return "outside_included_domains"
  }
  if (policy.sources.length > 0 && !policy.sources.includes(kindOf(result))) return "kind"
  if (policy.since === undefined && policy.until === undefined) return undefined
  const span = spanOf(result) ?? known
  if (span === undefined) return "undated"
  if (policy.since !== undefined && span.first < policy.since) return "before_since"
  if (policy.until !== undefined && span.last > policy.until) return "after_until"
  return undefined
}

/** The removals with more added: each counted; each URL listed once, up to `maxListedUrls`. */
export const addRemovals = (removals: Removals, added: ReadonlyArray<Removal>): Removals => {
  if (added.length === 0) return removals
  const counts = { ...removals.counts }
  const urls = [...removals.urls]
  const listed = new Set(urls.map((u) => u.url))
  for (const removal of added) {
    counts[removal.reason] = counts[removal.reason] + 1
    if (!listed.has(removal.url) && urls.length < maxListedUrls) {
      listed.add(removal.url)
      urls.push(removal)
    }
  }
  return new Removals({ total: removals.total + added.length, counts, urls })
}

// =============================================================================
// Pushdown
// =============================================================================

/** What of the policy a search request can carry for the backends that filter (see `SearchProvider.SearchOptions`). */
export interface Pushdown {
  readonly includeDomains?: ReadonlyArray<string> | undefined
  readonly excludeDomains?: ReadonlyArray<string> | undefined
  readonly since?: string | undefined
  readonly until?: string | undefined
  readonly timeRange?: "day" | "week" | "month" | "year" | undefined
}

const daysBetween = (from: string, to: string): number => (Date.parse(to) - Date.parse(from)) / 86_400_000

/**
 * The policy as search options: its domains and its dates, and for backends that know only a recent window (SearXNG's
 * `time_range`) the smallest one that holds `since` (none when `since` is more than a year before `today`).
 */
export const pushdown = (policy: Policy, today: string): Pushdown => {
  const age = policy.since === undefined ? undefined : daysBetween(policy.since, today)
  const timeRange =
    age === undefined || age > 365 ? undefined : age <= 1 ? "day" : age <= 7 ? "week" : age <= 31 ? "month" : "year"
  return {
    ...(policy.includeDomains.length > 0 ? { includeDomains: policy.includeDomains } : {}),
    ...(policy.excludeDomains.length > 0 ? { excludeDomains: policy.excludeDomains } : {}),
    ...(policy.since !== undefined ? { since: policy.since } : {}),
    ...(policy.until !== undefined ? { until: policy.until } : {}),
    ...(timeRange !== undefined ? { timeRange } : {})
  }
}
