/**
 * The arguments of the MCP tool \`review_plan\`: a decision about a session's plan, flat (a tool's input is one object,
 * never a union at its root), and the decision the runs take from them.
 */
import { Review, type Session } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as McpCall from "./mcpCall.js"

/** A decision about a session's plan, flat (a tool's input is one object, never a union at its root). */
export const ReviewArgs = Schema.Struct({
  sessionId: Schema.String,
  action: Schema.Literal("approve", "edit", "cancel").annotations({
    description: "approve the plan as it is, edit it (brief and/or directives), or cancel the run"
  }),
  brief: Schema.optional(Schema.String.pipe(Schema.maxLength(20_000))).annotations({
    description: "With edit: the brief's new text (the old one when left out)"
  }),
  directives: Schema.optional(
    Schema.Array(Schema.String.pipe(Schema.maxLength(4_000))).pipe(Schema.maxItems(Review.maxEditedDirectives))
  ).annotations({
    description:
      "With edit: the first round's directives, in order; a topic kept as it was keeps its directive, a new one is " +
      "added, one left out is dropped (the old ones when left out)"
  })
})

export const decisionOf = (args: typeof ReviewArgs.Type): Review.Decision =>
  args.action === "edit"
    ? {
        action: "edit",
        ...(args.brief === undefined ? {} : { brief: args.brief }),
        ...(args.directives === undefined ? {} : { directives: args.directives })
      }
    : { action: args.action }

/** What the elicitation form gives back. */
const Answer = Schema.Struct({
  action: Schema.Literal("approve", "edit", "cancel"),
  brief: Schema.optional(Schema.String),
  directives: Schema.optional(Schema.String)
})

/**
 * The decision about a session's plan, asked of the client's user through a form (MCP elicitation): approve, edit (a
 * new brief; the directives one a line) or cancel. None when the client cannot ask, or the user declined: the session
 * then waits for `review_plan`.
 */
export const elicited = (
  session: Session.Session,
  elicit: McpCall.Call["elicit"]
): Effect.Effect<Review.Decision | undefined> => {
  const plan = Review.planOf(session)
  if (elicit === undefined || plan === undefined) return Effect.succeed(undefined)
  return Effect.tryPromise(() =>
    elicit({
      mode: "form",
      message: `${Review.describe(plan)}\n\nApprove the plan, edit it, or cancel the research.`,
      requestedSchema: {
        type: "object",
        properties: {
          action: { type: "string", title: "Decision", enum: ["approve", "edit", "cancel"] },
          brief: { type: "string", title: "Brief (with edit)", default: plan.brief },
          directives: {
            type: "string",
            title: "Directives, one a line (with edit)",
            default: plan.directives.join("\n")
          }
        },
        required: ["action"]
      }
    })
  ).pipe(
    Effect.map((result) => {
      if (result.action !== "accept") return undefined
      const answer = Schema.decodeUnknownOption(Answer)(result.content)
      if (answer._tag === "None") return undefined
      const { action, brief, directives } = answer.value
      return decisionOf({
        sessionId: session.id,
        action,
        ...(brief === undefined ? {} : { brief }),
        ...(directives === undefined ? {} : { directives: directives.split("\n").filter((t) => t.trim() !== "") })
      })
    }),
    Effect.orElseSucceed(() => undefined)
  )
}
