/**
 * A DeepResearch Bench runner: research over a query file (`{id, topic, language, prompt}` lines), a concurrency
 * limit, resumable after interruption. Output, in one directory:
 * - `articles.jsonl`: `{id, prompt, article}` lines, the input of the benchmark's official scorer;
 * - `tasks/<id>.json`: one record per finished task (written atomically), the run's state: a rerun skips the tasks
 *   recorded as completed, and rebuilds `articles.jsonl` from the records so each id appears once;
 * - `table.md` and `table.json`: time, tokens, cost and citation-check figures per task.
 * The task, record and table schemas, and the making of the table, are in `internal/benchmarkRecords.ts` and public
 * here; this module reads the query file, keeps the run's directory and runs the tasks.
 */
import * as AtomicFile from "@deep-research/providers/AtomicFile"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import { fileURLToPath } from "node:url"
import { Errors, Pipeline, Session } from "@deep-research/core"
import { articleLine, recordOf, Table, tableMarkdown, tableOf, Task, TaskRecord } from "./internal/benchmarkRecords.js"

export {
  Article,
  CitationFigures,
  recordOf,
  Table,
  tableMarkdown,
  tableOf,
  TableRow,
  Task,
  TaskRecord
} from "./internal/benchmarkRecords.js"

// =============================================================================
// Schemas
// =============================================================================

/** What a run did: the tasks it ran now, those skipped as already completed, and the table over the directory. */
export class RunSummary extends Schema.Class<RunSummary>("@deep-research/evaluation/BenchmarkRunner/RunSummary")({
  selected: Schema.Int,
  ran: Schema.Array(Schema.Int),
  skipped: Schema.Array(Schema.Int),
  failed: Schema.Array(Schema.Int),
  table: Table
}) {}

/** A file of the run could not be read or written. */
export class BenchmarkFileError extends Schema.TaggedError<BenchmarkFileError>(
  "@deep-research/evaluation/BenchmarkFileError"
)("BenchmarkFileError", { path: Schema.String, reason: Schema.String }) {
  override get message(): string {
    return `Benchmark file ${this.path}: ${this.reason}`
  }
}

// =============================================================================
// Options
// =============================================================================

/** Which tasks to run. Every given criterion must hold; language and topic compare without case. */
export interface Filter {
  readonly ids?: ReadonlyArray<number> | undefined
  readonly languages?: ReadonlyArray<string> | undefined
  readonly topics?: ReadonlyArray<string> | undefined
  /** At most this many tasks (after filtering, in file order). */
  readonly limit?: number | undefined
}

/**
 * The session a task's research runs in. The runner notes the id before research starts, so that after an
 * interruption the same session is continued (`resuming`) from its last checkpoint instead of started again.
 */
export interface Attempt {
  readonly sessionId: string
  readonly resuming: boolean
}

/** Runs research for one task; a completed session with a report is a completed task. */
export type ResearchFunction<E, R> = (task: Task, attempt: Attempt) => Effect.Effect<Session.Session, E, R>

/** Options of research through core's pipeline. */
export interface PipelineOptions {
  /** The research configuration of every task. */
  readonly config?: Pipeline.ResearchOptions["config"]
}

/**
 * Research through core's pipeline. Clarification never blocks a benchmark run: the model's understanding of the
 * question stands as constraints ("proceed"). A task interrupted earlier resumes its session from the last
 * checkpoint (a session that had completed is returned as it is); one whose session was never saved starts again.
 */
export const pipelineResearch =
  (options?: PipelineOptions): ResearchFunction<Errors.ResearchError, Pipeline.Requirements> =>
  (task, attempt) => {
    const start = Pipeline.research(task.prompt, {
      config: options?.config,
      sessionId: attempt.sessionId,
      clarification: "proceed"
    })
    return attempt.resuming
      ? Pipeline.resume(attempt.sessionId).pipe(Effect.catchTag("ResearchSessionNotFound", () => start))
      : start
  }

/** Options of a run. */
export interface RunOptions<E, R> {
  readonly queryFile: string
  readonly outputDir: string
  readonly research: ResearchFunction<E, R>
  readonly filter?: Filter | undefined
  /** Tasks researched at once; 2 by default. */
  readonly concurrency?: number | undefined
  /** Run the tasks recorded as failed again; true by default. */
  readonly retryFailed?: boolean | undefined
  /** Called after each task's record is saved, e.g. to print progress. */
  readonly onTaskFinished?: ((record: TaskRecord) => Effect.Effect<void>) | undefined
  /** Called once the run knows its work, before any task starts: what it will run and what is done already. */
  readonly onPlanned?: ((plan: Plan) => Effect.Effect<void>) | undefined
}

/** What a run will do: the tasks selected, those it runs now, and those already completed in its directory. */
export interface Plan {
  readonly selected: number
  readonly pending: ReadonlyArray<Task>
  readonly skipped: ReadonlyArray<number>
}

/** The 100 tasks of DeepResearch Bench (`query.jsonl`), as this package ships them. */
export const bundledQueryFile: string = fileURLToPath(
  new URL("../data/deep-research-bench/query.jsonl", import.meta.url)
)

// =============================================================================
// Tasks
// =============================================================================

const decodeTaskLine = Schema.decodeUnknownEither(Schema.parseJson(Task))

/** Decodes a query file's text; a bad line is `ResearchInvalidInput` naming its line number. Blank lines are skipped. */
export const parseTasks = (
  text: string,
  file = "query file"
): Either.Either<ReadonlyArray<Task>, Errors.ResearchInvalidInput> => {
  const tasks: Array<Task> = []
  const seen = new Set<number>()
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]?.trim() ?? ""
    if (line === "") continue
    const decoded = decodeTaskLine(line)
    if (Either.isLeft(decoded)) {
      // One plain line per problem, naming its field ("language: is missing"), not the schema's tree.
      const reason = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
        .map((issue) => `${issue.path.length === 0 ? "" : `${issue.path.join(".")}: `}${issue.message}`)
        .join("; ")
      return Either.left(new Errors.ResearchInvalidInput({ reason: `${file}, line ${i + 1}: ${reason}` }))
    }
    if (seen.has(decoded.right.id)) {
      return Either.left(
        new Errors.ResearchInvalidInput({ reason: `${file}, line ${i + 1}: task id ${decoded.right.id} repeats` })
      )
    }
    seen.add(decoded.right.id)
    tasks.push(decoded.right)
  }
  return Either.right(tasks)
}

/** The tasks a filter selects, in file order. */
export const selectTasks = (tasks: ReadonlyArray<Task>, filter?: Filter): ReadonlyArray<Task> => {
  const ids = filter?.ids === undefined ? undefined : new Set(filter.ids)
  const languages = filter?.languages?.map((l) => l.toLowerCase())
  const topics = filter?.topics?.map((t) => t.toLowerCase())
  const selected = tasks.filter(
    (task) =>
      (ids === undefined || ids.has(task.id)) &&
      (languages === undefined || languages.includes(task.language.toLowerCase())) &&
      (topics === undefined || topics.includes(task.topic.toLowerCase()))
  )
  return filter?.limit === undefined ? selected : selected.slice(0, Math.max(0, filter.limit))
}

/** Reads and decodes a query file. */
export const readTasks = Effect.fn("BenchmarkRunner.readTasks")(function* (file: string) {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs
    .readFileString(file)
    .pipe(Effect.mapError((error) => new BenchmarkFileError({ path: file, reason: error.message })))
  return yield* parseTasks(text, file)
})

// =============================================================================
// Records and table
// =============================================================================

// =============================================================================
// Files
// =============================================================================

const decodeRecord = Schema.decodeUnknownEither(Schema.parseJson(TaskRecord))
const encodeRecord = Schema.encodeSync(Schema.parseJson(TaskRecord, { space: 2 }))
const encodeTable = Schema.encodeSync(Schema.parseJson(Table, { space: 2 }))

/** The files of a run directory. */
export const layout = (path: Path.Path, outputDir: string) => ({
  articles: path.join(outputDir, "articles.jsonl"),
  tasks: path.join(outputDir, "tasks"),
  record: (id: number) => path.join(outputDir, "tasks", `${id}.json`),
  /** The session id of a task whose research has started and not finished. */
  started: (id: number) => path.join(outputDir, "tasks", `${id}.session`),
  tableMarkdown: path.join(outputDir, "table.md"),
  tableJson: path.join(outputDir, "table.json")
})

const fileError = (path: string) => (error: { readonly message: string }) =>
  new BenchmarkFileError({ path, reason: error.message })

/** Replaces a file atomically (as the file store does), so a crash leaves the old file or the new one. */
const writeAtomically = (file: string, text: string) =>
  AtomicFile.writeString(file, text).pipe(Effect.mapError(fileError(file)))

/** Every decodable record in a run directory; an unreadable one is logged and treated as not finished. */
const loadRecords = (fs: FileSystem.FileSystem, path: Path.Path, outputDir: string) =>
  Effect.gen(function* () {
    const files = layout(path, outputDir)
    const names = yield* fs.readDirectory(files.tasks).pipe(Effect.mapError(fileError(files.tasks)))
    const records = yield* Effect.forEach(
      names.filter((name) => /^-?\d+\.json$/.test(name)),
      (name) =>
        Effect.gen(function* () {
          const file = path.join(files.tasks, name)
          const text = yield* fs.readFileString(file).pipe(Effect.mapError(fileError(file)))
          const decoded = decodeRecord(text)
          if (Either.isRight(decoded)) return Option.some(decoded.right)
          yield* Effect.logWarning(`ignoring unreadable task record ${file}; the task will run again`)
          return Option.none<TaskRecord>()
        }),
      { concurrency: 8 }
    )
    return records.flatMap((record) => (Option.isSome(record) ? [record.value] : []))
  })

// =============================================================================
// Running
// =============================================================================

const describeCause = <E>(cause: Cause.Cause<E>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    return error instanceof Error ? error.message : String(error)
  }
  return Cause.pretty(cause).split("\n")[0] ?? "unknown failure"
}

/** A run under way: its options, its directory's files, and the records so far, written one at a time. */
interface RunState<E, R> {
  readonly options: RunOptions<E, R>
  readonly fs: FileSystem.FileSystem
  readonly files: ReturnType<typeof layout>
  /** The records are the state: the articles file and the table are rebuilt from them. */
  readonly records: Map<number, TaskRecord>
  readonly lock: Effect.Semaphore
}

/**
 * The articles file from the records, which drops the line of a task whose record was never written and any line
 * cut short by a crash.
 */
const articlesOf = (records: ReadonlyMap<number, TaskRecord>): string =>
  [...records.values()]
    .filter((r) => r.status === "completed")
    .sort((a, b) => a.id - b.id)
    .map(articleLine)
    .join("")

const writeTable = <E, R>(run: RunState<E, R>) => {
  const table = tableOf([...run.records.values()])
  return Effect.zipRight(
    writeAtomically(run.files.tableJson, encodeTable(table)),
    writeAtomically(run.files.tableMarkdown, tableMarkdown(table))
  )
}

/** Saves a finished task's record, appends its article and rewrites the table. */
const save = <E, R>(run: RunState<E, R>, record: TaskRecord) =>
  run.lock.withPermits(1)(
    Effect.gen(function* () {
      const { files, fs } = run
      yield* writeAtomically(files.record(record.id), encodeRecord(record))
      run.records.set(record.id, record)
      // A failed task starts a new session next time rather than resuming one that failed.
      yield* fs
        .remove(files.started(record.id), { force: true })
        .pipe(Effect.mapError(fileError(files.started(record.id))))
      if (record.status === "completed") {
        yield* fs
          .writeFileString(files.articles, articleLine(record), { flag: "a" })
          .pipe(Effect.mapError(fileError(files.articles)))
      }
      yield* writeTable(run)
    })
  )

/** The session a task researches in: the one noted by an interrupted run, or a new one, noted before it starts. */
const startAttempt = <E, R>(run: RunState<E, R>, task: Task) =>
  Effect.gen(function* () {
    const file = run.files.started(task.id)
    const noted = yield* run.fs.readFileString(file).pipe(
      Effect.map((text) => text.trim()),
      Effect.orElseSucceed(() => "")
    )
    if (Schema.is(Session.SessionId)(noted)) return { sessionId: noted, resuming: true }
    const sessionId = `bench-${task.id}-${(yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)}`
    yield* writeAtomically(file, sessionId)
    return { sessionId, resuming: false }
  })

/** The record of a task whose research failed. */
const failedRecord = <E>(task: Task, startedAt: number, durationMillis: number, cause: Cause.Cause<E>): TaskRecord =>
  new TaskRecord({
    id: task.id,
    topic: task.topic,
    language: task.language,
    prompt: task.prompt,
    status: "failed",
    article: "",
    startedAt,
    durationMillis,
    tokens: 0,
    costUsd: 0,
    error: describeCause(cause)
  })

/** Researches one task and saves its record; interruption of the research interrupts the run. */
const runTask = <E, R>(run: RunState<E, R>, task: Task) =>
  Effect.gen(function* () {
    const attempt = yield* startAttempt(run, task)
    yield* Effect.logDebug(`benchmark task ${task.id} started in session ${attempt.sessionId}`)
    const startedAt = yield* Clock.currentTimeMillis
    const exit = yield* Effect.exit(run.options.research(task, attempt))
    const durationMillis = (yield* Clock.currentTimeMillis) - startedAt
    if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
    const record = Exit.isSuccess(exit)
      ? recordOf(task, exit.value, startedAt, durationMillis)
      : failedRecord(task, startedAt, durationMillis, exit.cause)
    // Once research is done its output is saved whole, even if the run is interrupted meanwhile.
    yield* Effect.uninterruptible(save(run, record))
    yield* Effect.logDebug(`benchmark task ${task.id} ${record.status}`)
    if (run.options.onTaskFinished !== undefined) yield* run.options.onTaskFinished(record)
    return record
  })

/**
 * Runs research over the selected tasks of a query file into `outputDir`, skipping the tasks already recorded as
 * completed there. A task's failure is recorded and the run goes on; interruption stops the run, and what finished
 * before it is kept.
 */
export const run = <E, R>(
  options: RunOptions<E, R>
): Effect.Effect<RunSummary, BenchmarkFileError | Errors.ResearchInvalidInput, R | FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const files = layout(path, options.outputDir)
    const selected = selectTasks(yield* readTasks(options.queryFile), options.filter)
    yield* fs.makeDirectory(files.tasks, { recursive: true }).pipe(Effect.mapError(fileError(files.tasks)))

    const records = new Map((yield* loadRecords(fs, path, options.outputDir)).map((r) => [r.id, r] as const))
    const retryFailed = options.retryFailed ?? true
    const isDone = (task: Task) => {
      const record = records.get(task.id)
      return record !== undefined && (record.status === "completed" || !retryFailed)
    }
    const skipped = selected.filter(isDone).map((task) => task.id)
    const pending = selected.filter((task) => !isDone(task))
    const state: RunState<E, R> = { options, fs, files, records, lock: yield* Effect.makeSemaphore(1) }

    yield* writeAtomically(files.articles, articlesOf(records))
    yield* writeTable(state)
    if (options.onPlanned !== undefined) yield* options.onPlanned({ selected: selected.length, pending, skipped })

    const finished = yield* Effect.forEach(pending, (task) => runTask(state, task), {
      concurrency: Math.max(1, options.concurrency ?? 2)
    })
    // Appended as each task ended, the lines are put back in the order of their ids.
    yield* writeAtomically(files.articles, articlesOf(records))
    return new RunSummary({
      selected: selected.length,
      ran: finished.map((r) => r.id),
      skipped,
      failed: finished.filter((r) => r.status === "failed").map((r) => r.id),
      table: tableOf([...records.values()])
    })
  }).pipe(Effect.withSpan("BenchmarkRunner.run"))
