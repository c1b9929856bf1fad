/**
 * The server side of the sessions, health and library parts of the API, over the process's hosted runs (and the
 * probe of their database, when they have one).
 */
import { type Errors, type FollowUp, ResearchEvents, type Session } from "@deep-research/core"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as RunSchema from "../RunSchema.js"
import { conflict, type JudgeUnavailable, type RunConflict } from "../RunSchema.js"
import type * as Runs from "../Runs.js"
import * as ServingRuns from "../ServingRuns.js"
import { version } from "../version.js"
import type * as DatabaseProbe from "../internal/serving/databaseProbe.js"
import { Api, type Ask, BadRequest, Conflict, type Continue, NotFound, ServerError, ServiceUnavailable } from "./Api.js"
import * as ReportExport from "../export/ReportExport.js"
import type { RunsOf } from "./Callers.js"
import * as ReportHtml from "./ReportHtml.js"
import * as Sse from "./Sse.js"

// =============================================================================
// Errors as the API states them
// =============================================================================

type StoreError = Errors.ResearchSessionNotFound | Errors.ResearchSessionCorrupt | Errors.ResearchInvalidInput

/** A store's error as the API's: unknown session 404, bad id 400, unreadable session 500. */
export const fromStoreError = (error: StoreError): NotFound | BadRequest | ServerError => {
  switch (error._tag) {
    case "ResearchSessionNotFound":
      return new NotFound({ message: error.message })
    case "ResearchInvalidInput":
      return new BadRequest({ message: error.message })
    case "ResearchSessionCorrupt":
      return new ServerError({ message: error.message })
  }
}

const fromRunError = (
  error: StoreError | RunConflict | Errors.ResearchSessionBusy
): NotFound | BadRequest | ServerError | Conflict =>
  error._tag === "RunConflict" || error._tag === "ResearchSessionBusy"
    ? new Conflict({ message: error.message })
    : fromStoreError(error)

/** A follow-up that failed: the session's state or the store as any request's, the model's failure a 500. */
const fromAskError = (
  error: FollowUp.Failure | RunConflict
): NotFound | BadRequest | ServerError | Conflict | ServiceUnavailable => {
  switch (error._tag) {
    case "ResearchSessionNotFound":
    case "ResearchInvalidInput":
    case "ResearchSessionCorrupt":
      return fromStoreError(error)
    case "RunConflict":
    case "ResearchSessionBusy":
      return new Conflict({ message: error.message })
    case "ProviderTimeout":
    case "ProviderUnavailable":
      return new ServiceUnavailable({ message: `the question was not answered: ${error.message}` })
    case "ResearchBudgetExhausted":
      return new Conflict({
        message: `the question was not answered: ${error.message}; ask again with a larger budget (budgetUsd or budgetTokens)`
      })
    default:
      return new ServerError({ message: `the question was not answered: ${error.message}` })
  }
}

// =============================================================================
// Sessions
// =============================================================================

const reportResponse = (
  session: Session.Session,
  options: { readonly format: "markdown" | "html" | "fragment"; readonly download: boolean }
): Effect.Effect<HttpServerResponse.HttpServerResponse, Conflict> => {
  const report = session.report
  if (report === undefined) {
    return Effect.fail(new Conflict({ message: conflict(session.id, session.status, "has no report yet").message }))
  }
  const markdown = options.format === "markdown"
  const body =
    options.format === "html"
      ? ReportHtml.page(report)
      : options.format === "fragment"
        ? ReportHtml.fragment(report)
        : report.markdown
  return Effect.succeed(
    HttpServerResponse.text(body, {
      contentType: markdown ? "text/markdown; charset=utf-8" : "text/html; charset=utf-8",
      headers: options.download
        ? { "content-disposition": `attachment; filename="${session.id}.${markdown ? "md" : "html"}"` }
        : {}
    })
  )
}

/** The report in an export format, as an attachment named after the session. */
const exportResponse = (
  session: Session.Session,
  format: ReportExport.Format
): Effect.Effect<HttpServerResponse.HttpServerResponse, Conflict | BadRequest> =>
  session.report === undefined
    ? Effect.fail(new Conflict({ message: conflict(session.id, session.status, "has no report yet").message }))
    : ReportExport.render(session, format).pipe(
        Effect.mapError((refused) => new BadRequest({ message: refused.message })),
        Effect.map((exported) =>
          HttpServerResponse.uint8Array(exported.body, {
            contentType: exported.contentType,
            headers: { "content-disposition": `attachment; filename="${exported.filename}"` }
          })
        )
      )

/** The session's events as SSE: the log after `after`, then live ones, then an `end` event with the status. */
export const eventStream = (runs: Runs.Runs, sessionId: string, after: number): HttpServerResponse.HttpServerResponse =>
  Sse.response(
    runs.events(sessionId, after).pipe(
      Stream.map(({ event, id }) => Sse.encode({ id, data: ResearchEvents.encodeJson(event) })),
      Stream.concat(
        Stream.fromEffect(
          runs.status(sessionId).pipe(
            Effect.map((status) => JSON.stringify({ sessionId, status: status.status })),
            Effect.orElseSucceed(() => JSON.stringify({ sessionId, status: "unknown" })),
            Effect.map((data) => Sse.encode({ event: "end", data }))
          )
        )
      )
    )
  )

/** An evaluation that failed, as the API states it. */
const fromEvaluateError = (error: Errors.ResearchError | RunConflict | JudgeUnavailable) => {
  switch (error._tag) {
    case "ResearchSessionNotFound":
      return new NotFound({ message: error.message })
    case "RunConflict":
      return new Conflict({ message: error.message })
    case "JudgeUnavailable":
      return new ServiceUnavailable({ message: error.message })
    default:
      return new ServerError({ message: error.message })
  }
}

/** Cancels a session: an unknown one is a 404, a known one not running a 409. */
const cancelled = (runs: Runs.Runs, id: string) =>
  Effect.mapError(
    Effect.zipRight(runs.isRunning(id) ? Effect.void : Effect.asVoid(runs.status(id)), runs.cancel(id)),
    fromRunError
  )

/** Evaluates a session's report; an unknown or malformed id is said as every other endpoint says it (404, 400). */
const evaluated = (runs: Runs.Runs, id: string) =>
  Effect.zipRight(
    Effect.mapError(runs.load(id), fromStoreError),
    Effect.map(Effect.mapError(runs.evaluate(id), fromEvaluateError), ({ evaluation }) => evaluation)
  )

const asked = (runs: Runs.Runs, id: string, payload: typeof Ask.Type) =>
  runs.ask === undefined
    ? Effect.fail(new ServiceUnavailable({ message: "follow-up questions are answered by a local server" }))
    : Effect.mapError(
        runs.ask(id, payload.question, { maxTokens: payload.budgetTokens, maxUsd: payload.budgetUsd }),
        fromAskError
      )

const continued = (runs: Runs.Runs, id: string, payload: typeof Continue.Type) =>
  runs.extend === undefined
    ? Effect.fail(new ServiceUnavailable({ message: "continuations run on a local server" }))
    : Effect.mapError(runs.extend(id, payload.direction, payload.rounds), fromRunError)

const loaded = (runs: Runs.Runs, id: string) => Effect.mapError(runs.load(id), fromStoreError)

const notFound = (error: { readonly message: string }) => new NotFound({ message: error.message })

/**
 * The sessions group. Each request reaches the runs as its caller does (`runsOf`): where the server tells its callers
 * apart, its own sessions and no one's.
 */
export const sessionsLayer = (runsOf: RunsOf) => {
  const runsFor = (request: HttpServerRequest.HttpServerRequest) => runsOf(request.headers["authorization"])
  return HttpApiBuilder.group(Api, "sessions", (handlers) =>
    handlers
      .handle("create", ({ payload: { question, ...options }, request }) =>
        ServingRuns.catchNotStored(
          Effect.mapError(
            runsFor(request).start(question, options),
            (error) => new BadRequest({ message: error.message })
          ),
          (error) => new ServiceUnavailable({ message: error.message })
        )
      )
      .handle("list", ({ request }) => runsFor(request).list)
      .handle("get", ({ path, request }) => Effect.mapError(runsFor(request).status(path.id), notFound))
      .handle("events", ({ headers, path, request, urlParams }) => {
        const runs = runsFor(request)
        return Effect.as(
          Effect.mapError(runs.status(path.id), notFound),
          eventStream(runs, path.id, headers["last-event-id"] ?? urlParams.after ?? 0)
        )
      })
      .handle("answer", ({ path, payload, request }) =>
        Effect.mapError(runsFor(request).answer(path.id, payload.answer), fromRunError)
      )
      .handle("review", ({ path, payload, request }) =>
        Effect.mapError(runsFor(request).review(path.id, payload), fromRunError)
      )
      .handle("cancel", ({ path, request }) => cancelled(runsFor(request), path.id))
      .handle("resume", ({ path, request }) => Effect.mapError(runsFor(request).resume(path.id), fromRunError))
      .handle("ask", ({ path, payload, request }) => asked(runsFor(request), path.id, payload))
      .handle("answers", ({ path, request }) =>
        Effect.map(loaded(runsFor(request), path.id), (session) => session.answers)
      )
      .handle("continue", ({ path, payload, request }) => continued(runsFor(request), path.id, payload))
      .handle("report", ({ path, request, urlParams }) =>
        Effect.flatMap(loaded(runsFor(request), path.id), (session) =>
          reportResponse(session, {
            format:
              urlParams.format ??
              ((request.headers["accept"] ?? "").startsWith("text/html") ? ("html" as const) : ("markdown" as const)),
            download: urlParams.download === "true"
          })
        )
      )
      .handle("export", ({ path, request, urlParams }) =>
        Effect.flatMap(loaded(runsFor(request), path.id), (session) => exportResponse(session, urlParams.format))
      )
      .handle("exportSchema", () => Effect.succeed(ReportExport.jsonSchema()))
      .handle("sources", ({ path, request }) => Effect.map(loaded(runsFor(request), path.id), RunSchema.sourcesOf))
      .handle("evaluate", ({ path, request }) => evaluated(runsFor(request), path.id))
      .handle("delete", ({ path, request }) => Effect.mapError(runsFor(request).remove(path.id), fromRunError))
  )
}

/** The library group: full-text search over every stored source. */
export const libraryLayer = (runsOf: RunsOf) =>
  HttpApiBuilder.group(Api, "library", (handlers) =>
    handlers.handle("search", ({ request, urlParams }) =>
      runsOf(request.headers["authorization"])
        .searchLibrary(urlParams.q, { limit: urlParams.limit })
        .pipe(
          Effect.map((passages) =>
            passages.map(({ score, sessionId, snippet, sourceId, title, url }) => ({
              sessionId,
              sourceId,
              url,
              title,
              snippet,
              score
            }))
          ),
          Effect.mapError((error) => new BadRequest({ message: error.message }))
        )
    )
  )

/** The system group: health, a 503 naming the database when there is one and it does not answer. */
export const systemLayer = (runs: Runs.Runs, database?: DatabaseProbe.Probe) =>
  HttpApiBuilder.group(Api, "system", (handlers) =>
    handlers.handle("health", () =>
      Effect.gen(function* () {
        const unavailable = database === undefined ? undefined : yield* database.check
        if (unavailable !== undefined) return yield* new ServiceUnavailable({ message: unavailable.message })
        return { status: "ok" as const, version, running: yield* runs.running }
      })
    )
  )
