/**
 * The answers of the scholarly keyless APIs as the emulator serves them, in the shapes their documentation gives (each
 * section names its pages), for tests to script and the simulated world to use: arXiv's Atom feed (its error feed and
 * its empty page of a non-empty result included), OpenAlex's works list with abstracts as inverted indexes, PubMed's
 * are in `keylessPubmed.ts`.
 */
import { escapeXml, json, xml } from "./keyless.js"
import type { Reply } from "./types.js"

// =============================================================================
// arXiv (arXiv API User's Manual: 3.3 Outline of an Atom feed, 3.4 Errors)
// =============================================================================

/** An e-print of the scripted feed. */
export interface ArxivEntry {
  /** e.g. `2401.01234v2`. */
  readonly id: string
  readonly title: string
  readonly summary: string
  readonly authors: ReadonlyArray<string>
  /** ISO date-time of the first version. */
  readonly published: string
  readonly primaryCategory?: string | undefined
  readonly journalRef?: string | undefined
  readonly doi?: string | undefined
  /** The abstract page; `http://arxiv.org/abs/{id}` by default. */
  readonly absUrl?: string | undefined
  /** The PDF; `http://arxiv.org/pdf/{id}` by default. */
  readonly pdfUrl?: string | undefined
}

const arxivEntry = (entry: ArxivEntry): string => {
  const abs = entry.absUrl ?? `http://arxiv.org/abs/${entry.id}`
  const pdf = entry.pdfUrl ?? `http://arxiv.org/pdf/${entry.id}`
  const category = entry.primaryCategory ?? "cs.CL"
  return [
    "  <entry>",
    `    <id>http://arxiv.org/abs/${entry.id}</id>`,
    `    <updated>${entry.published}</updated>`,
    `    <published>${entry.published}</published>`,
    `    <title>${escapeXml(entry.title)}</title>`,
    `    <summary>  ${escapeXml(entry.summary)}\n    </summary>`,
    ...entry.authors.map((author) => `    <author>\n      <name>${escapeXml(author)}</name>\n    </author>`),
    ...(entry.doi !== undefined
      ? [`    <arxiv:doi xmlns:arxiv="http://arxiv.org/schemas/atom">${entry.doi}</arxiv:doi>`]
      : []),
    ...(entry.doi !== undefined ? [`    <link title="doi" href="http://dx.doi.org/${entry.doi}" rel="related"/>`] : []),
    '    <arxiv:comment xmlns:arxiv="http://arxiv.org/schemas/atom">12 pages, 4 figures</arxiv:comment>',
    ...(entry.journalRef !== undefined
      ? [
          `    <arxiv:journal_ref xmlns:arxiv="http://arxiv.org/schemas/atom">${escapeXml(entry.journalRef)}</arxiv:journal_ref>`
        ]
      : []),
    `    <link href="${abs}" rel="alternate" type="text/html"/>`,
    `    <link title="pdf" href="${pdf}" rel="related" type="application/pdf"/>`,
    `    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="${category}" scheme="http://arxiv.org/schemas/atom"/>`,
    `    <category term="${category}" scheme="http://arxiv.org/schemas/atom"/>`,
    "  </entry>"
  ].join("\n")
}

const arxivFeedText = (entries: ReadonlyArray<string>, total: number, query: string): string =>
  [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom">',
    `  <link href="http://arxiv.org/api/query?${escapeXml(query)}" rel="self" type="application/atom+xml"/>`,
    `  <title type="html">ArXiv Query: ${escapeXml(query)}</title>`,
    "  <id>http://arxiv.org/api/cHxbiOdZaP56ODnBPIenZhzg5f8</id>",
    "  <updated>2025-11-03T00:00:00-05:00</updated>",
    `  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">${total}</opensearch:totalResults>`,
    '  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>',
    `  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">${entries.length}</opensearch:itemsPerPage>`,
    ...entries,
    "</feed>",
    ""
  ].join("\n")

/** A feed of `entries`; `total` (their number by default) larger than none of them plays arXiv's empty page. */
export const arxivFeed = (entries: ReadonlyArray<ArxivEntry>, options?: { readonly total?: number }): Reply =>
  xml(
    arxivFeedText(entries.map(arxivEntry), options?.total ?? entries.length, "search_query=all:electron&start=0"),
    "application/atom+xml; charset=utf-8"
  )

/** An error feed: one entry under `http://arxiv.org/api/errors`, with HTTP 400 as the API answers a bad parameter. */
export const arxivErrorFeed = (message: string): Reply => {
  const anchor = message.replace(/[^A-Za-z0-9.]+/g, "_")
  const entry = [
    "  <entry>",
    `    <id>http://arxiv.org/api/errors#${anchor}</id>`,
    "    <title>Error</title>",
    `    <summary>${escapeXml(message)}</summary>`,
    "    <updated>2025-11-03T00:00:00-05:00</updated>",
    `    <link href="http://arxiv.org/api/errors#${anchor}" rel="alternate" type="text/html"/>`,
    "    <author>\n      <name>arXiv api core</name>\n    </author>",
    "  </entry>"
  ].join("\n")
  return xml(arxivFeedText([entry], 1, "search_query=&id_list="), "application/atom+xml; charset=utf-8", 400)
}

// =============================================================================
// OpenAlex (developers.openalex.org: Work object, Get lists of entities)
// =============================================================================

/** What a scripted work says; `openalexWork` makes the API's object of it. */
export interface OpenAlexWorkInput {
  readonly id: string
  readonly title: string
  readonly abstract: string
  readonly authors: ReadonlyArray<string>
  readonly year: number
  readonly venue?: string | undefined
  readonly doi?: string | undefined
  readonly type?: string | undefined
  readonly landingPage?: string | undefined
  readonly oaUrl?: string | undefined
}

/** An abstract as OpenAlex gives it: each word with the positions it holds. */
export const invertedIndex = (text: string): Record<string, Array<number>> => {
  const index: Record<string, Array<number>> = {}
  text
    .split(/\s+/)
    .filter((word) => word !== "")
    .forEach((word, position) => {
      const positions = Object.hasOwn(index, word) ? index[word] : undefined
      if (positions === undefined) index[word] = [position]
      else positions.push(position)
    })
  return index
}

/** A work object with the fields OpenAlex documents (those `select` asks for, and the ids). */
export const openalexWork = (work: OpenAlexWorkInput) => {
  const doi = work.doi === undefined ? null : `https://doi.org/${work.doi}`
  const location = {
    is_oa: work.oaUrl !== undefined,
    landing_page_url: work.landingPage ?? doi,
    pdf_url: work.oaUrl ?? null,
    source:
      work.venue === undefined
        ? null
        : {
            id: "https://openalex.org/S4306400194",
            display_name: work.venue,
            type: work.type === "preprint" ? "repository" : "journal"
          },
    license: null,
    version: work.type === "preprint" ? "submittedVersion" : "publishedVersion"
  }
  return {
    id: `https://openalex.org/${work.id}`,
    doi,
    display_name: work.title,
    publication_year: work.year,
    publication_date: `${work.year}-06-12`,
    type: work.type ?? "article",
    authorships: work.authors.map((name, i) => ({
      author_position: i === 0 ? "first" : "middle",
      author: { id: `https://openalex.org/A${5000000000 + i}`, display_name: name, orcid: null },
      institutions: [],
      raw_author_name: name
    })),
    primary_location: location,
    best_oa_location: work.oaUrl === undefined ? null : location,
    open_access: {
      is_oa: work.oaUrl !== undefined,
      oa_status: work.oaUrl === undefined ? "closed" : "green",
      oa_url: work.oaUrl ?? null,
      any_repository_has_fulltext: work.oaUrl !== undefined
    },
    abstract_inverted_index: work.abstract === "" ? null : invertedIndex(work.abstract)
  }
}

/** A works-search answer (`meta`, `results`, `group_by`). */
export const openalexWorks = (works: ReadonlyArray<unknown>, options?: { readonly count?: number }): Reply =>
  json({
    meta: { count: options?.count ?? works.length, db_response_time_ms: 41, page: 1, per_page: works.length },
    results: works,
    group_by: []
  })
