/**
 * The HTTP API of `deep-research serve`, declared once: the server implements it, `/openapi.json` and `/docs`
 * describe it, and `Client.make` calls it. Sessions (REST and Server-Sent Events), health, and an OpenAI-compatible
 * chat endpoint; every group but health sits behind the bearer token when one is configured.
 */
import { Research, Review } from "@deep-research/core"
import { Evaluation } from "@deep-research/evaluation"
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import * as RunSchema from "../RunSchema.js"
import { Listed, RunStatus, Started, StartOptions, trimmedText } from "../RunSchema.js"
import { version } from "../version.js"
import { Authorization, BadRequest, Conflict, NotFound, ServerError, ServiceUnavailable } from "./ApiErrors.js"
import { Library } from "./ApiLibrary.js"
import { withValidComponentNames } from "./openApiNames.js"
import * as OpenAiSchema from "./OpenAiSchema.js"

// The errors and the token check every group shares, and the library's group.
export {
  Authorization,
  BadRequest,
  Conflict,
  NotFound,
  ServerError,
  ServiceUnavailable,
  Unauthorized
} from "./ApiErrors.js"
export { Library, LibraryPassage } from "./ApiLibrary.js"

/** A new session: the question and the run's options. Unknown fields are refused, so a typo is not ignored. */
export const CreateSession = Schema.Struct({
  question: trimmedText("What to research, in any language"),
  ...StartOptions.fields
}).annotations({ identifier: "CreateSession", parseOptions: { onExcessProperty: "error", errors: "all" } })

/** The answer to a session's clarifying question. */
export const Answer = Schema.Struct({
  answer: trimmedText("The answer to the clarification question")
}).annotations({ identifier: "Answer", parseOptions: { onExcessProperty: "error", errors: "all" } })

/** A follow-up question about a finished session. */
export const Ask = Schema.Struct({
  question: trimmedText("The follow-up question, answered from the session's stored sources"),
  budgetTokens: Schema.optional(RunSchema.setting.budgetTokens).annotations({
    description: "A new token budget for the session, kept with it: for an answer its budget can no longer pay for"
  }),
  budgetUsd: Schema.optional(RunSchema.setting.budgetUsd).annotations({
    description: "A new USD budget for the session, kept with it: for an answer its budget can no longer pay for"
  })
}).annotations({ identifier: "Ask", parseOptions: { onExcessProperty: "error", errors: "all" } })

/** A direction a finished session researches further. */
export const Continue = Schema.Struct({
  direction: trimmedText("What to research further, from what the session found"),
  rounds: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 50)).annotations({ description: "Supervision rounds at most (default 2)" })
  )
}).annotations({ identifier: "Continue", parseOptions: { onExcessProperty: "error", errors: "all" } })

/** An answer to a follow-up question, as the session keeps it. */
export const FollowUpAnswer = Research.FollowUpAnswer.annotations({ identifier: "FollowUpAnswer" })

/** The decision about a session's plan: approve it, edit it (the brief's text, the directives) or cancel the run. */
export const ReviewDecision = Review.Decision.annotations({
  identifier: "ReviewDecision",
  parseOptions: { onExcessProperty: "error", errors: "all" }
})

const SessionPath = Schema.Struct({
  id: Schema.String.annotations({ description: "A session id, as create or list returned it" })
})

/** A session's status after a cancel. */
export const Cancelled = Schema.Struct({ sessionId: Schema.String, status: Schema.String })

/** A source the session retrieved (the MCP server's research results carry the same). */
export const SourceView = RunSchema.SourceView

/** The server is up. */
export const Health = Schema.Struct({
  status: Schema.Literal("ok"),
  version: Schema.String,
  running: Schema.Int.annotations({ description: "Sessions this server runs now, queued included" })
})

const ReportParams = Schema.Struct({
  format: Schema.optional(Schema.Literal("markdown", "html", "fragment")).annotations({
    description:
      "markdown (the default); html: a standalone page with numbered citations linking to the sources; fragment: " +
      "the same report as an <article> to put in a page of one's own"
  }),
  download: Schema.optional(Schema.Literal("true", "false")).annotations({
    description: "true: sent as an attachment named after the session"
  })
})

const ExportParams = Schema.Struct({
  format: Schema.Literal("md", "html", "pdf", "docx", "json").annotations({
    description:
      "md, html, pdf, docx or json: citations linked to the source list, sources to their URLs, the citation " +
      "check's marks and closing line kept; json follows the schema at /api/schemas/report-export"
  })
})

const EventsParams = Schema.Struct({
  after: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())).annotations({
    description: "Replay from after this event id (as Last-Event-ID does); default 0, the whole log"
  })
})

const EventsHeaders = Schema.Struct({
  "last-event-id": Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()))
})

// =============================================================================
// Endpoints
// =============================================================================

/** Sessions: start, list, follow, answer, cancel, resume, read, evaluate and delete research. */
export class Sessions extends HttpApiGroup.make("sessions")
  .add(
    HttpApiEndpoint.post("create", "/api/sessions")
      .annotate(OpenApi.Summary, "Start research")
      .setPayload(CreateSession)
      .addSuccess(Started, { status: 202 })
      .addError(BadRequest)
      .annotate(OpenApi.Description, "Starts researching a question; returns the session id at once.")
  )
  .add(
    HttpApiEndpoint.get("list", "/api/sessions")
      .annotate(OpenApi.Summary, "List sessions")
      .addSuccess(Schema.Array(Listed))
  )
  .add(
    HttpApiEndpoint.get("get", "/api/sessions/:id")
      .annotate(OpenApi.Summary, "Get a session's status")
      .setPath(SessionPath)
      .addSuccess(RunStatus)
      .addError(NotFound)
      .annotate(OpenApi.Description, "Status and live progress: phase, round, researchers, sources, tokens, cost.")
  )
  .add(
    HttpApiEndpoint.get("events", "/api/sessions/:id/events")
      .annotate(OpenApi.Summary, "Follow a session's events")
      .setPath(SessionPath)
      .setUrlParams(EventsParams)
      .setHeaders(EventsHeaders)
      .addSuccess(HttpApiSchema.Text({ contentType: "text/event-stream" }))
      .addError(NotFound)
      .annotate(
        OpenApi.Description,
        "Server-Sent Events: the session's log from the start (or after Last-Event-ID), then live events until " +
          "the run ends; each event's id is its position in the log, its data a JSON progress event. A last " +
          "`end` event carries the session's status."
      )
  )
  .add(
    HttpApiEndpoint.post("answer", "/api/sessions/:id/answer")
      .annotate(OpenApi.Summary, "Answer the clarification question")
      .setPath(SessionPath)
      .setPayload(Answer)
      .addSuccess(Started, { status: 202 })
      .addError(NotFound)
      .addError(Conflict)
      .addError(BadRequest)
  )
  .add(
    HttpApiEndpoint.post("review", "/api/sessions/:id/review")
      .annotate(OpenApi.Summary, "Approve, edit or cancel the plan")
      .annotate(
        OpenApi.Description,
        "For a session awaiting_review (started with review: true): approve its brief and first directives, edit " +
          'them ({"action": "edit", "brief": "...", "directives": ["..."]}), or cancel it. Research begins after.'
      )
      .setPath(SessionPath)
      .setPayload(ReviewDecision)
      .addSuccess(Started, { status: 202 })
      .addError(NotFound)
      .addError(Conflict)
      .addError(BadRequest)
  )
  .add(
    HttpApiEndpoint.post("ask", "/api/sessions/:id/ask")
      .annotate(OpenApi.Summary, "Ask a follow-up question")
      .annotate(
        OpenApi.Description,
        "Answers from the finished session's stored sources, cited with the session's own numbers and checked as a " +
          "report is; `covered: false` says the sources do not cover it (continue can research it). Kept in order. " +
          "Its model calls draw on the session's budget: 409 when it is spent, unless `budgetTokens` or `budgetUsd` " +
          "give the session a larger one. On a cluster the session's worker answers it (503 when none does in time)."
      )
      .setPath(SessionPath)
      .setPayload(Ask)
      .addSuccess(FollowUpAnswer)
      .addError(NotFound)
      .addError(Conflict)
      .addError(BadRequest)
  )
  .add(
    HttpApiEndpoint.get("answers", "/api/sessions/:id/answers")
      .annotate(OpenApi.Summary, "Read the follow-up answers")
      .setPath(SessionPath)
      .addSuccess(Schema.Array(FollowUpAnswer))
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("continue", "/api/sessions/:id/continue")
      .annotate(OpenApi.Summary, "Go deeper in a new direction")
      .annotate(
        OpenApi.Description,
        "A completed session researches the direction in a few more rounds from what it found (nothing it read is " +
          "fetched again) and writes its report again as a new version; the earlier ones are kept."
      )
      .setPath(SessionPath)
      .setPayload(Continue)
      .addSuccess(Started, { status: 202 })
      .addError(NotFound)
      .addError(Conflict)
      .addError(BadRequest)
  )
  .add(
    HttpApiEndpoint.post("cancel", "/api/sessions/:id/cancel")
      .annotate(OpenApi.Summary, "Cancel a session")
      .setPath(SessionPath)
      .addSuccess(Cancelled)
      .addError(NotFound)
      .addError(Conflict)
  )
  .add(
    HttpApiEndpoint.post("resume", "/api/sessions/:id/resume")
      .annotate(OpenApi.Summary, "Resume a session")
      .setPath(SessionPath)
      .addSuccess(Started, { status: 202 })
      .addError(NotFound)
      .addError(Conflict)
      .addError(BadRequest)
  )
  .add(
    HttpApiEndpoint.get("report", "/api/sessions/:id/report")
      .annotate(OpenApi.Summary, "Read the report")
      .setPath(SessionPath)
      .setUrlParams(ReportParams)
      .addSuccess(HttpApiSchema.Text({ contentType: "text/markdown" }))
      .addError(NotFound)
      .addError(Conflict)
  )
  .add(
    HttpApiEndpoint.get("export", "/api/sessions/:id/export")
      .annotate(OpenApi.Summary, "Export the report")
      .annotate(
        OpenApi.Description,
        "The report as a file named after the session (Content-Disposition: attachment), in the content type of " +
          "its format. A PDF of a report its font cannot show (Chinese, Japanese, Korean) or written right to left " +
          "is a 400 that says so; docx and html carry every script."
      )
      .setPath(SessionPath)
      .setUrlParams(ExportParams)
      .addSuccess(HttpApiSchema.Uint8Array({ contentType: "application/octet-stream" }))
      .addError(NotFound)
      .addError(Conflict)
      .addError(BadRequest)
  )
  .add(
    HttpApiEndpoint.get("exportSchema", "/api/schemas/report-export")
      .annotate(OpenApi.Summary, "The JSON Schema of the JSON export")
      .addSuccess(HttpApiSchema.Text({ contentType: "application/schema+json" }))
  )
  .add(
    HttpApiEndpoint.get("sources", "/api/sessions/:id/sources")
      .annotate(OpenApi.Summary, "List the sources")
      .setPath(SessionPath)
      .addSuccess(Schema.Array(SourceView))
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("evaluate", "/api/sessions/:id/evaluate")
      .annotate(OpenApi.Summary, "Evaluate the report")
      .setPath(SessionPath)
      .addSuccess(Evaluation.Evaluation)
      .addError(NotFound)
      .addError(Conflict)
      .addError(ServerError)
      .annotate(
        OpenApi.Description,
        "Judges the report on eight dimensions and checks its citations: a simulated session by the built-in " +
          "emulator, any other by the server's model (503 when it has none)."
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/api/sessions/:id")
      .annotate(OpenApi.Summary, "Delete a session")
      .setPath(SessionPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .addError(Conflict)
  )
  .addError(ServerError)
  .addError(BadRequest)
  .addError(ServiceUnavailable)
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Research sessions: start one, follow it live, answer its clarifying question, cancel or resume it, read and " +
      "evaluate its report."
  ) {}

/** Liveness, open to anyone: it says nothing about the sessions. A database that does not answer makes it a 503. */
export class System extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/api/health")
      .annotate(OpenApi.Summary, "Health")
      .addSuccess(Health)
      .addError(ServiceUnavailable)
  )
  .annotate(OpenApi.Description, "The server's health, open without a token.") {}

/** The OpenAI-compatible endpoints: model `deep-research`, the last user message is the question. */
export class OpenAi extends HttpApiGroup.make("openai")
  .add(
    HttpApiEndpoint.get("models", "/v1/models")
      .annotate(OpenApi.Summary, "List models")
      .addSuccess(OpenAiSchema.ModelList)
  )
  .add(
    HttpApiEndpoint.get("model", "/v1/models/:model")
      .annotate(OpenApi.Summary, "Get a model")
      .setPath(Schema.Struct({ model: Schema.String }))
      .addSuccess(OpenAiSchema.Model)
      .addError(OpenAiSchema.ModelNotFound)
      .annotate(OpenApi.Description, "The model `deep-research`; any other is not found.")
  )
  .add(
    HttpApiEndpoint.post("chatCompletions", "/v1/chat/completions")
      .annotate(OpenApi.Summary, "Chat completion (research)")
      .setPayload(OpenAiSchema.ChatRequest)
      .addSuccess(OpenAiSchema.ChatCompletion)
      .addError(OpenAiSchema.InvalidRequest)
      .addError(OpenAiSchema.ModelNotFound)
      .addError(OpenAiSchema.ResearchFailed)
      .annotate(
        OpenApi.Description,
        "Runs research on the conversation's last user message. Non-streamed: the report is the answer. " +
          "Streamed (`stream: true`): progress arrives as `reasoning_content` deltas as it happens, then the report " +
          "as `content`."
      )
  )
  .addError(ServiceUnavailable)
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "OpenAI-compatible endpoints: any OpenAI client researches with model `deep-research`, the conversation's last " +
      "user message being the question."
  ) {}

/** The whole API. */
export class Api extends HttpApi.make("deep-research")
  .add(Sessions)
  .add(System)
  .add(Library)
  .add(OpenAi)
  .annotate(OpenApi.Title, "deep-research")
  .annotate(OpenApi.Transform, withValidComponentNames)
  .annotate(OpenApi.Version, version)
  .annotate(OpenApi.License, { name: "MIT", url: "https://opensource.org/licenses/MIT" })
  // The document is served by the server it describes: its paths are on the document's own origin.
  .annotate(OpenApi.Servers, [{ url: "/", description: "The server that serves this document" }])
  .annotate(
    OpenApi.Description,
    "Turns a question into a cited research report. Start a session, follow it live, answer its clarifying " +
      "question, read the report."
  ) {}
