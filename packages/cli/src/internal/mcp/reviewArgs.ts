/**
 * The arguments of the MCP tool \`review_plan\`: a decision about a session's plan, flat (a tool's input is one object,
 * never a union at its root), and the decision the runs take from them.
 */
import { Review } from "@deep-research/core"
import * as Schema from "effect/Schema"

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
