/**
 * What the MCP server's tools answer with, as structured results: the run a tool started, a cancel, a delete, a list.
 */
import * as Schema from "effect/Schema"
import * as RunSchema from "../../RunSchema.js"

/**
 * What `start_research`, `answer_clarification` and `resume_research` give: the run, and, when it runs in this server's
 * process, that it lives as long as the process does.
 */
export const StartedHere = Schema.Struct({
  ...RunSchema.Started.fields,
  note: Schema.optional(Schema.String)
})

/**
 * A client that starts a server for each call (the MCP Inspector's CLI mode) stops it right after the answer, and with
 * it the run: said where the client reads it.
 */
export const hostedNote =
  "The research runs inside this MCP server's process: keep the server running and poll get_status until it " +
  "completes. If the server stops first (a client that starts a server for each call, such as the MCP Inspector's " +
  "CLI mode, stops it right after this answer), the session is stored cancelled; resume it with resume_research."

/** The same over HTTP: the run belongs to `deep-research serve`, not to the client's connection. */
export const servedNote =
  "The research runs in this server (deep-research serve), whether or not this client stays connected: poll " +
  "get_status until it completes, or follow its events at /api/sessions/{sessionId}/events."

/** What `cancel_research` gives: the session and where it stands now. */
export const Cancelled = Schema.Struct({ sessionId: Schema.String, status: Schema.String })

/** What `delete_session` gives. */
export const Deleted = Schema.Struct({ sessionId: Schema.String, deleted: Schema.Literal(true) })

/** What `list_sessions` gives: MCP's structured results are objects, so the list is a field. */
export const SessionList = Schema.Struct({ sessions: Schema.Array(RunSchema.Listed) })
