/**
 * The review of a run's plan (`review`): after the brief and the supervisor's first round of directives, before any
 * search, the user approves the plan, edits it (the brief's text; directives added, changed or dropped) or cancels the
 * run. Where someone can answer at once (a terminal: the `UserInput`) they are asked; a caller that answers later
 * (a server, MCP) leaves the session `awaiting_review`, durably, and continues it with `resume` and a decision; where
 * nobody can answer, the run says so and goes on as planned: it never blocks.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ResearchInvalidInput } from "../Errors.js"
import { Brief, Directive, IssuedDirective, SupervisionRound } from "../Research.js"
import { PlanReview, type Session } from "../Session.js"
import { UserInput } from "../UserInput.js"
import { patch } from "./Checkpoint.js"

/**
 * How a plan is reviewed: asked of the person in context (`ask`), left waiting for a later decision (`await`, for a
 * server or MCP, which answer through `resume`), or not at all where nobody can answer (`proceed`). Without this in
 * context: `ask` where there is a `UserInput`, else `proceed`.
 */
export class ReviewMode extends Context.Tag("@deep-research/core/Review/ReviewMode")<
  ReviewMode,
  "ask" | "await" | "proceed"
>() {}

/** Runs `self` with plans left waiting for a decision (`awaiting_review`): what a server does. */
export const awaiting = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, ReviewMode>> =>
  Effect.provideService(self, ReviewMode, "await")

/** The review mode in context, else the default. */
export const mode: Effect.Effect<"ask" | "await" | "proceed"> = Effect.gen(function* () {
  const given = yield* Effect.serviceOption(ReviewMode)
  if (Option.isSome(given)) return given.value
  return Option.isSome(yield* Effect.serviceOption(UserInput)) ? "ask" : "proceed"
})

/** Directives an edit may give at most. */
export const maxEditedDirectives = 20

const text = (max: number) => Schema.String.pipe(Schema.maxLength(max))

/** What the user decided about a plan, as the HTTP API, MCP and `resume` take it. */
export const Decision = Schema.Union(
  Schema.Struct({ action: Schema.Literal("approve") }),
  Schema.Struct({
    action: Schema.Literal("edit"),
    brief: Schema.optional(text(20_000)).annotations({ description: "The brief's new text; the old one when absent" }),
    directives: Schema.optional(Schema.Array(text(4_000)).pipe(Schema.maxItems(maxEditedDirectives))).annotations({
      description:
        "The first round's directives, in order, as their topics: a topic kept as it was keeps its directive, a new " +
        "one is added, one left out is dropped; the old ones when absent"
    })
  }),
  Schema.Struct({ action: Schema.Literal("cancel") })
).annotations({ identifier: "ReviewDecision" })
export type Decision = typeof Decision.Type

/** The plan under review: the brief's text and the first round's directives' topics. */
export interface Plan {
  readonly brief: string
  readonly directives: ReadonlyArray<string>
}

/** The plan a session holds (its brief and its first round), if it has one. */
export const planOf = (session: Session): Plan | undefined => {
  const first = session.rounds.find((round) => round.round === 1)
  if (first === undefined) return undefined
  return {
    brief: session.brief?.brief ?? session.query,
    directives: first.directives.map((d) => d.directive.topic)
  }
}

/** The plan as the user reads it. */
export const describe = (plan: Plan): string =>
  [
    "The research plan, before any search:",
    "",
    `Brief: ${plan.brief}`,
    "",
    "Directives:",
    ...plan.directives.map((topic, i) => `  ${i + 1}. ${topic}`)
  ].join("\n")

/** The first round with its directives edited: those whose topic is kept stay as they were; new ones are added. */
const editedRound = (round: SupervisionRound, topics: ReadonlyArray<string>): SupervisionRound => {
  const wanted = topics.map((t) => t.trim()).filter((t) => t !== "")
  const directives = wanted.map((topic, i) => {
    const kept = round.directives.find((d) => d.directive.topic === topic)
    const directive =
      kept?.directive ??
      new Directive({ topic, perspective: "as the user asked", evidenceNeeded: "primary sources", priority: 2 })
    return new IssuedDirective({ id: `r${round.round}-d${i + 1}`, round: round.round, directive })
  })
  return new SupervisionRound({ ...round, directives, results: [], completed: false })
}

/**
 * The session once the decision is applied: approved or edited, it runs on (an edit replaces the brief's text and the
 * first round's directives, and keeps the originals in the review); cancelled, it is cancelled with its plan kept, so
 * that a later `resume` asks again.
 */
export const apply = (session: Session, decision: Decision): Effect.Effect<Session, ResearchInvalidInput> => {
  const plan = planOf(session)
  if (plan === undefined) {
    return Effect.fail(new ResearchInvalidInput({ reason: `session ${session.id} has no plan to review` }))
  }
  switch (decision.action) {
    case "cancel":
      return Effect.succeed(patch(session, { status: "cancelled" }))
    case "approve":
      return Effect.succeed(patch(session, { status: "running", review: new PlanReview({ decision: "approved" }) }))
    case "edit": {
      if (decision.directives !== undefined && decision.directives.every((t) => t.trim() === "")) {
        return Effect.fail(new ResearchInvalidInput({ reason: "an edited plan needs at least one directive" }))
      }
      const brief =
        decision.brief === undefined || decision.brief.trim() === ""
          ? session.brief
          : session.brief === undefined
            ? new Brief({
                brief: decision.brief.trim(),
                scope: { include: [], exclude: [] },
                sourcePreferences: [],
                language: ""
              })
            : new Brief({ ...session.brief, brief: decision.brief.trim() })
      return Effect.succeed(
        patch(session, {
          status: "running",
          ...(brief === undefined ? {} : { brief }),
          rounds: session.rounds.map((round) =>
            round.round === 1 && decision.directives !== undefined ? editedRound(round, decision.directives) : round
          ),
          review: new PlanReview({
            decision: "edited",
            originalBrief: plan.brief,
            originalDirectives: plan.directives
          })
        })
      )
    }
  }
}

/**
 * Fails as `apply` would, without applying: a server checks a decision before it answers that the session goes on, so
 * that an edit that drops every directive is refused to its sender rather than failing the run it started.
 */
export const validate = (session: Session, decision: Decision): Effect.Effect<void, ResearchInvalidInput> =>
  Effect.asVoid(apply(session, decision))

/** The decision in the words of the `PlanReviewed` event. */
export const decisionWord = (decision: Decision): "approved" | "edited" | "cancelled" =>
  decision.action === "approve" ? "approved" : decision.action === "edit" ? "edited" : "cancelled"

/** The answer "" or a declined question: nobody answered. */
const ask = (input: UserInput["Type"], question: string) =>
  input.ask(question).pipe(
    Effect.map((answer) => answer.trim()),
    Effect.orElseSucceed(() => undefined)
  )

/**
 * Asks the person in context for a decision about `plan`: approve (the default), edit (a new brief, then each
 * directive kept, changed or dropped, then new ones) or cancel. None when nobody is there or they decline.
 */
export const askNow = (plan: Plan): Effect.Effect<Option.Option<Decision>> =>
  Effect.gen(function* () {
    const found = yield* Effect.serviceOption(UserInput)
    if (Option.isNone(found)) return Option.none()
    const input = found.value
    const choice = yield* ask(input, `${describe(plan)}\n\nApprove (a), edit (e) or cancel (c)? [a]`)
    if (choice === undefined) return Option.none()
    const first = choice.toLowerCase().slice(0, 1)
    if (first === "c") return Option.some<Decision>({ action: "cancel" })
    if (first !== "e") return Option.some<Decision>({ action: "approve" })
    const brief = (yield* ask(input, "New brief (empty keeps it):")) ?? ""
    const directives: Array<string> = []
    for (const [i, topic] of plan.directives.entries()) {
      const answer = yield* ask(
        input,
        `Directive ${i + 1}: ${topic}\nEmpty keeps it, "-" drops it, new text changes it:`
      )
      if (answer === "-") continue
      directives.push(answer === undefined || answer === "" ? topic : answer)
    }
    while (directives.length < maxEditedDirectives) {
      const added = yield* ask(input, "A directive to add (empty when done):")
      if (added === undefined || added === "") break
      directives.push(added)
    }
    // Every directive dropped and none added would research nothing: one is asked for, or the planned ones stay.
    if (directives.length === 0) {
      const added = yield* ask(
        input,
        "An edited plan needs at least one directive. A directive to research (empty keeps the planned ones):"
      )
      directives.push(...(added === undefined || added === "" ? plan.directives : [added]))
    }
    return Option.some<Decision>({
      action: "edit",
      ...(brief !== "" ? { brief } : {}),
      directives
    })
  })
