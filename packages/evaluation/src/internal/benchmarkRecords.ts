/**
 * What a DeepResearch Bench run writes of each task: the task as the query file gives it, the record a finished task
 * leaves (its article, time, spending and citation figures), the per-task table over the records, and the scorer's
 * article line. Public through `BenchmarkRunner`; apart from it so that the run's files and loop read on their own.
 */
import * as Schema from "effect/Schema"
import { Session, UsageLedger } from "@deep-research/core"
import * as CitationCheck from "../CitationCheck.js"

// =============================================================================
// Schemas
// =============================================================================

/** One benchmark task, as a line of the query file. */
export class Task extends Schema.Class<Task>("@deep-research/evaluation/BenchmarkRunner/Task")({
  id: Schema.Int,
  topic: Schema.String,
  language: Schema.String,
  prompt: Schema.String
}) {}

/** A line of the scorer's input. */
export class Article extends Schema.Class<Article>("@deep-research/evaluation/BenchmarkRunner/Article")({
  id: Schema.Int,
  prompt: Schema.String,
  article: Schema.String
}) {}

/** The citation-check figures of one task. */
export class CitationFigures extends Schema.Class<CitationFigures>(
  "@deep-research/evaluation/BenchmarkRunner/CitationFigures"
)({
  inlineCitations: Schema.Int,
  listedSources: Schema.Int,
  retrievedSources: Schema.Int,
  danglingCitations: Schema.Int,
  uncitedSources: Schema.Int,
  duplicateSources: Schema.Int,
  unretrievedSources: Schema.Int,
  unsupportedQuotes: Schema.Int
}) {}

/** What one task produced. A failed task has an empty article and its error, and runs again on the next run. */
export class TaskRecord extends Schema.Class<TaskRecord>("@deep-research/evaluation/BenchmarkRunner/TaskRecord")({
  id: Schema.Int,
  topic: Schema.String,
  language: Schema.String,
  prompt: Schema.String,
  status: Schema.Literal("completed", "failed"),
  article: Schema.String,
  sessionId: Schema.optional(Schema.String),
  startedAt: Schema.Number,
  durationMillis: Schema.Number,
  tokens: Schema.Number,
  costUsd: Schema.Number,
  citations: Schema.optional(CitationFigures),
  error: Schema.optional(Schema.String)
}) {}

/** A row of the per-task table (the record without its article). */
export class TableRow extends Schema.Class<TableRow>("@deep-research/evaluation/BenchmarkRunner/TableRow")({
  id: Schema.Int,
  language: Schema.String,
  topic: Schema.String,
  status: Schema.Literal("completed", "failed"),
  sessionId: Schema.optional(Schema.String),
  durationMillis: Schema.Number,
  tokens: Schema.Number,
  costUsd: Schema.Number,
  articleChars: Schema.Int,
  citations: Schema.optional(CitationFigures),
  error: Schema.optional(Schema.String)
}) {}

/** The per-task table and its totals. */
export class Table extends Schema.Class<Table>("@deep-research/evaluation/BenchmarkRunner/Table")({
  rows: Schema.Array(TableRow),
  completed: Schema.Int,
  failed: Schema.Int,
  durationMillis: Schema.Number,
  tokens: Schema.Number,
  costUsd: Schema.Number
}) {}

// =============================================================================
// Records and table
// =============================================================================

/** The record of a finished research: its article, time, spending and citation figures. */
export const recordOf = (
  task: Task,
  session: Session.Session,
  startedAt: number,
  durationMillis: number
): TaskRecord => {
  const totals = UsageLedger.totals(session.usage)
  const common = {
    id: task.id,
    topic: task.topic,
    language: task.language,
    prompt: task.prompt,
    sessionId: session.id,
    startedAt,
    durationMillis,
    tokens: totals.tokens,
    costUsd: totals.costUsd
  }
  const markdown = session.report?.markdown ?? ""
  if (session.status !== "completed" || markdown.trim() === "") {
    const why = session.error?.message ?? (markdown.trim() === "" ? "no report" : "")
    return new TaskRecord({
      ...common,
      status: "failed",
      article: "",
      error: `the session ended ${session.status}${why === "" ? "" : `: ${why}`}`
    })
  }
  const check = CitationCheck.checkSession(session)
  return new TaskRecord({
    ...common,
    status: "completed",
    article: markdown,
    citations: new CitationFigures({
      inlineCitations: check.inlineCitations,
      listedSources: check.listedSources,
      retrievedSources: check.retrievedSources,
      ...check.counts
    })
  })
}

/** The per-task table of some records, ordered by task id. */
export const tableOf = (records: ReadonlyArray<TaskRecord>): Table => {
  const rows = [...records]
    .sort((a, b) => a.id - b.id)
    .map(
      (record) =>
        new TableRow({
          id: record.id,
          language: record.language,
          topic: record.topic,
          status: record.status,
          durationMillis: record.durationMillis,
          tokens: record.tokens,
          costUsd: record.costUsd,
          articleChars: record.article.length,
          ...(record.sessionId === undefined ? {} : { sessionId: record.sessionId }),
          ...(record.citations === undefined ? {} : { citations: record.citations }),
          ...(record.error === undefined ? {} : { error: record.error })
        })
    )
  return new Table({
    rows,
    completed: rows.filter((r) => r.status === "completed").length,
    failed: rows.filter((r) => r.status === "failed").length,
    durationMillis: rows.reduce((n, r) => n + r.durationMillis, 0),
    tokens: rows.reduce((n, r) => n + r.tokens, 0),
    costUsd: rows.reduce((n, r) => n + r.costUsd, 0)
  })
}

const cell = (text: string): string => text.replace(/\|/g, "\\|").replace(/\s+/g, " ").slice(0, 120)

/** The table as markdown. */
export const tableMarkdown = (table: Table): string => {
  const header = [
    "| id | lang | status | time (s) | tokens | cost (USD) | chars | inline cites | listed | retrieved | dangling | uncited | duplicate | unretrieved | bad quotes | error |",
    "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  ]
  const figures = (c: CitationFigures | undefined): ReadonlyArray<string> =>
    c === undefined
      ? ["", "", "", "", "", "", "", ""]
      : [
          c.inlineCitations,
          c.listedSources,
          c.retrievedSources,
          c.danglingCitations,
          c.uncitedSources,
          c.duplicateSources,
          c.unretrievedSources,
          c.unsupportedQuotes
        ].map(String)
  const rows = table.rows.map((r) =>
    [
      String(r.id),
      r.language,
      r.status,
      (r.durationMillis / 1000).toFixed(1),
      String(r.tokens),
      r.costUsd.toFixed(4),
      String(r.articleChars),
      ...figures(r.citations),
      cell(r.error ?? "")
    ].join(" | ")
  )
  const totals = [
    "**total**",
    "",
    `${table.completed} completed, ${table.failed} failed`,
    (table.durationMillis / 1000).toFixed(1),
    String(table.tokens),
    table.costUsd.toFixed(4),
    ...Array.from({ length: 10 }, () => "")
  ].join(" | ")
  return [...header, ...rows.map((r) => `| ${r} |`), `| ${totals} |`, ""].join("\n")
}

/** A task's line of the scorer's input, `articles.jsonl`. */
export const articleLine = (record: TaskRecord): string =>
  JSON.stringify(
    Schema.encodeSync(Article)(new Article({ id: record.id, prompt: record.prompt, article: record.article }))
  ) + "\n"
