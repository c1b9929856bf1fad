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
import { conflict, type RunConflict } from "../RunSchema.js"
import type * as Runs from "../Runs.js"
import * as ServingRuns from "../ServingRuns.js"
import { version } from "../version.js"
import type * as DatabaseProbe from "../internal/serving/databaseProbe.js"
import { Api, BadRequest, Conflict, NotFound, ServerError, ServiceUnavailable } from "./Api.js"
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

/** A handler given the runs as the caller of its request reaches them. */
const reaching =
  <A extends { readonly request: HttpServerRequest.HttpServerRequest }, R>(
    runsOf: RunsOf,
    f: (args: A, runs: Runs.Runs) => R
  ) =>
  (args: A): R =>
    f(args, runsOf(args.request.headers["authorization"]))

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

/** The sessions group. */
export const sessionsLayer = (runsOf: RunsOf) =>
  HttpApiBuilder.group(Api, "sessions", (handlers) =>
    handlers
      .handle(
        "create",
        reaching(runsOf, ({ payload: { question, ...options } }, runs) =>
          ServingRuns.catchNotStored(
            Effect.mapError(runs.start(question, options), (error) => new BadRequest({ message: error.message })),
            (error) => new ServiceUnavailable({ message: error.message })
          )
        )
      )
      .handle(
        "list",
        reaching(runsOf, (_, runs) => runs.list)
      )
      .handle(
        "get",
        reaching(runsOf, ({ path }, runs) =>
          Effect.mapError(runs.status(path.id), (error) => new NotFound({ message: error.message }))
        )
      )
      .handle(
        "events",
        reaching(runsOf, ({ headers, path, urlParams }, runs) =>
          Effect.as(
            Effect.mapError(runs.status(path.id), (error) => new NotFound({ message: error.message })),
            eventStream(runs, path.id, headers["last-event-id"] ?? urlParams.after ?? 0)
          )
        )
      )
      .handle(
        "answer",
        reaching(runsOf, ({ path, payload }, runs) =>
          Effect.mapError(runs.answer(path.id, payload.answer), fromRunError)
        )
      )
      .handle(
        "review",
        reaching(runsOf, ({ path, payload }, runs) => Effect.mapError(runs.review(path.id, payload), fromRunError))
      )
      .handle(
        "cancel",
        reaching(runsOf, ({ path }, runs) =>
          // An unknown session is a 404, a known one not running a 409.
          Effect.mapError(
            Effect.zipRight(
              runs.isRunning(path.id) ? Effect.void : Effect.asVoid(runs.status(path.id)),
              runs.cancel(path.id)
            ),
            fromRunError
          )
        )
      )
      .handle(
        "resume",
        reaching(runsOf, ({ path }, runs) => Effect.mapError(runs.resume(path.id), fromRunError))
      )
      .handle(
        "ask",
        reaching(runsOf, ({ path, payload }, runs) =>
          runs.ask === undefined
            ? Effect.fail(new ServiceUnavailable({ message: "follow-up questions are answered by a local server" }))
            : Effect.mapError(
                runs.ask(path.id, payload.question, {
                  maxTokens: payload.budgetTokens,
                  maxUsd: payload.budgetUsd
                }),
                fromAskError
              )
        )
      )
      .handle(
        "answers",
        reaching(runsOf, ({ path }, runs) =>
          Effect.mapError(
            Effect.map(runs.load(path.id), (session) => session.answers),
            fromStoreError
          )
        )
      )
      .handle(
        "continue",
        reaching(runsOf, ({ path, payload }, runs) =>
          runs.extend === undefined
            ? Effect.fail(new ServiceUnavailable({ message: "continuations run on a local server" }))
            : Effect.mapError(runs.extend(path.id, payload.direction, payload.rounds), fromRunError)
        )
      )
      .handle(
        "report",
        reaching(runsOf, ({ path, request, urlParams }, runs) =>
          Effect.flatMap(Effect.mapError(runs.load(path.id), fromStoreError), (session) =>
            reportResponse(session, {
              format:
                urlParams.format ??
                ((request.headers["accept"] ?? "").startsWith("text/html") ? ("html" as const) : ("markdown" as const)),
              download: urlParams.download === "true"
            })
          )
        )
      )
      .handle(
        "export",
        reaching(runsOf, ({ path, urlParams }, runs) =>
          Effect.flatMap(Effect.mapError(runs.load(path.id), fromStoreError), (session) =>
            exportResponse(session, urlParams.format)
          )
        )
      )
      .handle("exportSchema", () => Effect.succeed(ReportExport.jsonSchema()))
      .handle(
        "sources",
        reaching(runsOf, ({ path }, runs) =>
          Effect.map(Effect.mapError(runs.load(path.id), fromStoreError), RunSchema.sourcesOf)
        )
      )
      .handle(
        "evaluate",
        reaching(runsOf, ({ path }, runs) =>
          Effect.gen(function* () {
            // An unknown or malformed id is said as every other endpoint says it (404, 400).
            yield* Effect.mapError(runs.load(path.id), fromStoreError)
            const { evaluation } = yield* Effect.mapError(runs.evaluate(path.id), (error) => {
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
            })
            return evaluation
          })
        )
      )
      .handle(
        "delete",
        reaching(runsOf, ({ path }, runs) => Effect.mapError(runs.remove(path.id), fromRunError))
      )
  )

/** The library group: full-text search over every stored source. */
export const libraryLayer = (runsOf: RunsOf) =>
  HttpApiBuilder.group(Api, "library", (handlers) =>
    handlers.handle("search", ({ request, urlParams }) =>
      runsOf(request.headers["authorization"])
        .searchLibrary(urlParams.q, urlParams.limit)
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
