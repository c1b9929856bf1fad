/**
 * What searching and reading produce: search results, extracted pages and the sources a session keeps.
 */
import * as Schema from "effect/Schema"

/**
 * What a scholarly source is, as a reference list names it: its authors (in order), year, venue, DOI, and whether it
 * is a preprint (not yet peer reviewed). Scholarly search providers fill it; a web page has none.
 */
export class Work extends Schema.Class<Work>("@deep-research/core/Work")({
  authors: Schema.Array(Schema.String),
  year: Schema.optional(Schema.Int),
  venue: Schema.optional(Schema.String),
  doi: Schema.optional(Schema.String),
  preprint: Schema.optional(Schema.Boolean)
}) {}

/** A work in one line: `A. Author, B. Author, C. Author et al. (2017), Venue, preprint`. */
export const describeWork = (work: Work): string => {
  const authors = work.authors.length > 3 ? `${work.authors.slice(0, 3).join(", ")} et al.` : work.authors.join(", ")
  const year = work.year === undefined ? "" : authors === "" ? String(work.year) : `(${work.year})`
  return [
    [authors, year].filter((part) => part !== "").join(" "),
    work.venue?.trim() ?? "",
    work.preprint === true ? "preprint" : ""
  ]
    .filter((part) => part !== "")
    .join(", ")
}

/** One result of a search provider. */
export class SearchResult extends Schema.Class<SearchResult>("@deep-research/core/SearchResult")({
  url: Schema.String,
  title: Schema.String,
  snippet: Schema.String,
  rawContent: Schema.optional(Schema.String),
  score: Schema.optional(Schema.Number),
  publishedDate: Schema.optional(Schema.String),
  provider: Schema.String,
  /** The bibliographic facts of a scholarly result. */
  work: Schema.optional(Work)
}) {}

/** A page a content extractor read. `content` is text or markdown-like text, never raw HTML. */
export class ExtractedPage extends Schema.TaggedClass<ExtractedPage>("@deep-research/core/ExtractedPage")(
  "ExtractedPage",
  {
    url: Schema.String,
    title: Schema.String,
    content: Schema.String,
    contentType: Schema.optional(Schema.String)
  }
) {}

/** A URL that could not be read, and why. The rest of the batch is unaffected. */
export class ExtractFailure extends Schema.TaggedClass<ExtractFailure>("@deep-research/core/ExtractFailure")(
  "ExtractFailure",
  {
    url: Schema.String,
    reason: Schema.String
  }
) {}

/** The outcome of extracting one URL. */
export const ExtractResult = Schema.Union(ExtractedPage, ExtractFailure)
export type ExtractResult = typeof ExtractResult.Type

/** How new a source is compared with what the researcher has already seen. */
export const Novelty = Schema.Literal("new", "related", "duplicate")
export type Novelty = typeof Novelty.Type

/** A rough quality grade of a source, from its domain and kind. */
export const SourceQuality = Schema.Literal("high", "medium", "low", "unknown")
export type SourceQuality = typeof SourceQuality.Type

/** A fetch-time summary of one source: an executive summary and at most five verbatim excerpts. */
export class SourceSummary extends Schema.Class<SourceSummary>("@deep-research/core/SourceSummary")({
  summary: Schema.String,
  excerpts: Schema.Array(Schema.String).pipe(Schema.maxItems(5))
}) {}

/** Where a source of the library came from: the earlier session that stored it, and its id there (`library`). */
export class SourceOrigin extends Schema.Class<SourceOrigin>("@deep-research/core/SourceOrigin")({
  sessionId: Schema.String,
  sourceId: Schema.String
}) {}

/** A source the session retrieved. Its id is stable within a session and is what citations point at. */
export class Source extends Schema.Class<Source>("@deep-research/core/Source")({
  id: Schema.String,
  url: Schema.String,
  title: Schema.String,
  /** What the researcher was shown: the summary where there is one, else the raw text (capped). */
  content: Schema.String,
  summary: Schema.optional(SourceSummary),
  provider: Schema.String,
  quality: SourceQuality,
  publishedDate: Schema.optional(Schema.String),
  retrievedAt: Schema.Number,
  /** The directive whose researcher found it. */
  directiveId: Schema.optional(Schema.String),
  /** Characters of raw text behind this source, before summarisation. */
  rawLength: Schema.Number,
  /** The bibliographic facts of a scholarly source: what its entry in the report's source list names. */
  work: Schema.optional(Work),
  /** The earlier session it was taken from, for a source of the library (never fetched by this session). */
  origin: Schema.optional(SourceOrigin)
}) {}
