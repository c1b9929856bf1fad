/**
 * `deep-research bench`: DeepResearch Bench from the command line, over the evaluation package's runner. The tasks of
 * a query file (the benchmark's 100, shipped, by default), chosen by id, language and topic, are researched a few at a
 * time into one folder: the official scorer's `{id, prompt, article}` lines (`articles.jsonl`), a table of time, tokens,
 * cost and citation checks per task, and a record per task, from which a run stopped anywhere goes on where it stopped.
 */
import { Research, Session } from "@deep-research/core"
import { BenchmarkRunner } from "@deep-research/evaluation"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as nodePath from "node:path"
import type * as CliConfig from "./CliConfig.js"
import { Exited } from "./internal/commandLine/exited.js"
import { printableLine } from "./internal/terminal/printable.js"
import * as Store from "./Store.js"
import * as Wiring from "./Wiring.js"

/** What to run, and where. */
export interface Options {
  /** The query file; the benchmark's own tasks when undefined. */
  readonly tasksFile: string | undefined
  readonly outputDir: string
  readonly filter: BenchmarkRunner.Filter
  /** Tasks researched at once. */
  readonly parallel: number
}

/** The filter's options as given on the command line. */
export interface FilterFlags {
  readonly ids: string | undefined
  readonly language: string | undefined
  readonly topic: string | undefined
  readonly limit: number | undefined
}

const listOf = (text: string): ReadonlyArray<string> =>
  text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "")

/** `1,2,51-60` as task ids, or what is wrong with it. */
export const parseIds = (text: string): Either.Either<ReadonlyArray<number>, string> => {
  const ids: Array<number> = []
  for (const item of listOf(text)) {
    const range = /^(\d+)(?:-(\d+))?$/.exec(item)
    const from = Number(range?.[1])
    const to = range?.[2] === undefined ? from : Number(range[2])
    if (range === null || to < from) {
      return Either.left(`--ids takes task ids and ranges such as 1,2,51-60; "${item}" is not one`)
    }
    for (let id = from; id <= to; id++) ids.push(id)
  }
  return ids.length === 0 ? Either.left("--ids names no task") : Either.right(ids)
}

/** The runner's filter from the command line's options, or what is wrong with them. */
export const filterOf = (flags: FilterFlags): Either.Either<BenchmarkRunner.Filter, string> =>
  Either.gen(function* () {
    if (flags.limit !== undefined && (!Number.isInteger(flags.limit) || flags.limit < 1)) {
      return yield* Either.left(`--limit takes a positive whole number, got ${flags.limit}`)
    }
    return {
      ids: flags.ids === undefined ? undefined : yield* parseIds(flags.ids),
      languages: flags.language === undefined ? undefined : listOf(flags.language),
      topics: flags.topic === undefined ? undefined : listOf(flags.topic),
      limit: flags.limit
    }
  })

const seconds = (millis: number) => (millis / 1000).toFixed(1)

const tokens = (n: number) =>
  n >= 1_000_000 ? `${(n / 1e6).toFixed(1)}M` : n >= 1000 ? `${(n / 1e3).toFixed(1)}k` : `${n}`

/** One task's line of progress, once it has finished. */
const finishedLine = (record: BenchmarkRunner.TaskRecord, done: number, of: number): string =>
  `[${done}/${of}] task ${record.id} (${record.language}, ${record.topic}) ${record.status} in ` +
  `${seconds(record.durationMillis)}s · ${tokens(record.tokens)} tokens · $${record.costUsd.toFixed(4)}` +
  (record.error === undefined ? "" : `: ${printableLine(record.error).slice(0, 200)}`)

/** The table of cost and time per task, for the terminal (the files have it with the citation checks too). */
export const tableText = (table: BenchmarkRunner.Table): string => {
  const topicWidth = Math.min(28, Math.max(5, ...table.rows.map((row) => row.topic.length)))
  const header = `${"id".padStart(4)}  lang  ${"topic".padEnd(topicWidth)}  status     time (s)  tokens  cost (USD)`
  const rows = table.rows.map(
    (row) =>
      `${String(row.id).padStart(4)}  ${row.language.padEnd(4)}  ${row.topic.slice(0, topicWidth).padEnd(topicWidth)}  ` +
      `${row.status.padEnd(9)}  ${seconds(row.durationMillis).padStart(8)}  ${tokens(row.tokens).padStart(6)}  ` +
      `${row.costUsd.toFixed(4).padStart(10)}`
  )
  const total =
    `total: ${table.completed} completed, ${table.failed} failed · ${seconds(table.durationMillis)} s · ` +
    `${tokens(table.tokens)} tokens · $${table.costUsd.toFixed(4)}`
  return [header, ...rows, total].join("\n")
}

/** A simulated run's article carries the banner its report has everywhere else. */
const markedSimulated = (session: Session.Session): Session.Session =>
  session.report === undefined
    ? session
    : new Session.Session({
        ...session,
        report: new Research.Report({ ...session.report, markdown: Store.markSimulated(session.report.markdown) })
      })

const err = (line: string) => Effect.sync(() => void process.stderr.write(`${line}\n`))
const out = (line: string) => Effect.sync(() => void process.stdout.write(`${line}\n`))

/** Runs the benchmark's selected tasks into the output folder, saying each task's end; the table and what next. */
export const run = (resolved: CliConfig.Resolved, options: Options) =>
  Effect.gen(function* () {
    const tasksFile = options.tasksFile ?? BenchmarkRunner.bundledQueryFile
    const outputDir = nodePath.resolve(options.outputDir)
    const pipeline = BenchmarkRunner.pipelineResearch({ config: resolved.research })
    const progress = { done: 0, of: 0 }
    if (resolved.simulate) {
      yield* err("[simulated] an offline run against the built-in emulator: no real model or web is used")
    }
    const summary = yield* BenchmarkRunner.run({
      queryFile: tasksFile,
      outputDir,
      filter: options.filter,
      concurrency: options.parallel,
      research: (task, attempt) =>
        err(
          `task ${task.id} (${task.language}, ${task.topic}) ${attempt.resuming ? "resumed" : "started"}: session ` +
            attempt.sessionId
        ).pipe(
          Effect.zipRight(pipeline(task, attempt)),
          Effect.map((session) => (resolved.simulate ? markedSimulated(session) : session))
        ),
      onPlanned: (plan) => {
        progress.of = plan.pending.length
        return err(
          `DeepResearch Bench: ${plan.selected} tasks selected from ${tasksFile}; ` +
            (plan.skipped.length === 0 ? "" : `${plan.skipped.length} already completed in ${outputDir}, `) +
            `${plan.pending.length} to run, ${options.parallel} at a time`
        )
      },
      onTaskFinished: (record) => err(finishedLine(record, ++progress.done, progress.of))
    }).pipe(
      Effect.provide(Wiring.layer(resolved)),
      Effect.onInterrupt(() =>
        err(`\nInterrupted. What finished is kept in ${outputDir}: run the same command again to go on from there.`)
      ),
      Effect.mapError((error) => new Exited({ code: 2, message: error.message }))
    )
    yield* out(tableText(summary.table))
    yield* out(
      [
        "",
        `${resolved.simulate ? "[simulated] " : ""}Articles for the scorer: ${nodePath.join(outputDir, "articles.jsonl")} ` +
          "({id, prompt, article} lines)",
        `Table with each task's citation checks: ${nodePath.join(outputDir, "table.md")} (and table.json)`,
        "Next: score the articles with DeepResearch Bench's own scorer (RACE and FACT), as the README says."
      ].join("\n")
    )
    if (summary.failed.length > 0) {
      return yield* new Exited({
        code: 1,
        message:
          `${summary.failed.length} of the tasks failed (${summary.failed.join(", ")}): run the same command again ` +
          "to retry them; the completed ones are not run again."
      })
    }
  })
