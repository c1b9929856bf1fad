/**
 * A scripted world for pipeline tests: every role of the router is a scripted model that plays its part of a run
 * (clarification, brief, a supervisor delegating the given topics, researchers that search once and complete,
 * compression, the report), over a small static web, a memory session store and an event stream.
 */
import { Duration, Effect, Fiber, Layer, Option, Ref, TestClock } from "effect"
import type * as LanguageModel from "../src/LanguageModel.js"
import * as ResearchEvents from "../src/ResearchEvents.js"
import * as Resilience from "../src/Resilience.js"
import * as Summarizer from "../src/Summarizer.js"
import { MemorySessionStore, ScriptedModel, StaticWeb } from "../src/testing/index.js"
import type { Role } from "../src/Usage.js"

/** Topics the supervisor delegates in round one; each names a page of the static web by its keyword. */
export const topics = ["ALPHA", "BRAVO", "CHARLIE", "DELTA"] as const

const keywords: ReadonlyArray<string> = [...topics, "FAIL"]

const urlOf = (keyword: string) => `https://${keyword.toLowerCase()}.example.org/facts`

/** A page per topic, short enough not to need summarising. */
export const pages: ReadonlyArray<StaticWeb.Page> = keywords.map((keyword) => ({
  url: urlOf(keyword),
  title: `Facts about ${keyword}`,
  content: `${keyword} facts: ${keyword} was measured at 42 units in 2024 by the ${keyword} institute.`
}))

/** The text of a request: system prompt and messages. */
export const requestText = (request: LanguageModel.GenerateRequest): string =>
  [
    request.system ?? "",
    ...request.messages.map((m) =>
      m._tag === "assistant" ? m.content + m.toolCalls.map((c) => JSON.stringify(c.arguments)).join("") : m.content
    )
  ].join("\n")

/** The assignment of a researcher or compression request (the directive's topic). */
export const assignmentOf = (request: LanguageModel.GenerateRequest): string => {
  const text = requestText(request)
  return /## Your assignment\n(.+)/.exec(text)?.[1] ?? /The research assignment:\n(.+)/.exec(text)?.[1] ?? ""
}

/** The keyword of a topic text. */
export const keywordOf = (text: string): string =>
  keywords.find((keyword) => text.includes(`Investigate ${keyword}`)) ?? "UNKNOWN"

/** A directive for a keyword. */
export const directive = (keyword: string, priority = 1) => ({
  topic: `Investigate ${keyword} thoroughly: what it is, the latest measurements, and who measured them.`,
  perspective: "measurements",
  evidenceNeeded: "primary measurements",
  priority
})

/** The supervisor's turn delegating the given keywords. */
export const delegate = (...keywords: ReadonlyArray<string>): ScriptedModel.Reply =>
  ScriptedModel.toolCalls(
    { name: "think", arguments: { reflection: "Each keyword needs its own researcher." } },
    ...keywords.map((keyword) => ({ name: "conductResearch", arguments: directive(keyword) }))
  )

/** The supervisor's turn ending research. */
export const complete: ScriptedModel.Reply = ScriptedModel.toolCalls({ name: "researchComplete", arguments: {} })

export const clarificationNotNeeded = ScriptedModel.json({
  needClarification: false,
  question: "",
  verification: "Research the measurements of the named topics."
})

export const clarificationNeeded = ScriptedModel.json({
  needClarification: true,
  question: "Which year do you care about?",
  verification: "Measurements of the topics, year open."
})

export const brief = ScriptedModel.json({
  brief: "I want the latest measurements of each topic and who made them.",
  scope: { include: ["measurements"], exclude: [] },
  sourcePreferences: ["the measuring institutes"],
  language: "English"
})

/** Researcher turns: search for the keyword, then complete citing the first result. */
export const researcherTurn = (request: LanguageModel.GenerateRequest): Exclude<ScriptedModel.Reply, string> => {
  const keyword = keywordOf(assignmentOf(request))
  const turn = request.messages.filter((m) => m._tag === "assistant").length
  return turn === 0
    ? { toolCalls: [{ name: "webSearch", arguments: { queries: [`${keyword} facts`] } }] }
    : {
        toolCalls: [
          { name: "researchComplete", arguments: { summary: `${keyword} was measured at 42 units in 2024 [1].` } }
        ]
      }
}

/** The researcher's script. */
export const researcher: ScriptedModel.Script = (request) => researcherTurn(request)

/** Compression that keeps the researcher's claim and adds a supervisor brief. */
export const compression: ScriptedModel.Script = (request) => {
  const keyword = keywordOf(assignmentOf(request))
  return [
    "## Findings",
    `${keyword} was measured at 42 units in 2024 by the ${keyword} institute [1]. The measurement is recent and ` +
      `comes from the institute itself [1].`,
    "",
    "## Supervisor brief",
    `Covered: ${keyword} measurements`,
    `Key findings: 42 units in 2024 [1]`,
    "Confidence: medium, one primary source",
    "Gaps: none"
  ].join("\n")
}

/** A report citing the first two sources and one that does not exist. */
export const report = "# Measurements\n\nThe first topic measured 42 units [1]. The second too [2]. Invented [99]."

/** The default scripts of each role. */
export const scripts = (overrides: Partial<Record<Role, ScriptedModel.Script>> = {}): ScriptedModel.RouterScripts => ({
  default: ["unexpected call"],
  roles: {
    clarification: [clarificationNotNeeded],
    brief: [brief],
    supervisor: [delegate(...topics), complete],
    researcher,
    compression,
    summarization: [ScriptedModel.json({ summary: "summary", excerpts: [] })],
    report: [report],
    ...overrides
  }
})

/** Everything a run needs: the scripted router (and its log), the summarizer over it, the web, a store, events. */
export const world = (options: {
  readonly scripts?: ScriptedModel.RouterScripts | undefined
  readonly web?: Partial<StaticWeb.Options> | undefined
  /** Every model call goes through a resilience policy with these settings. */
  readonly resilience?: Resilience.Settings | undefined
}) => {
  const scripted = ScriptedModel.layerRouter(options.scripts ?? scripts())
  const router =
    options.resilience === undefined ? scripted : scripted.pipe(Layer.provide(Resilience.layer(options.resilience)))
  return Layer.mergeAll(
    Layer.provideMerge(Summarizer.layer, router),
    // A query finds the page of the keyword it names, and only that one.
    StaticWeb.layer({
      pages,
      route: (query) => keywords.filter((keyword) => query.toUpperCase().includes(keyword)).map(urlOf),
      ...options.web
    }),
    MemorySessionStore.layer,
    ResearchEvents.layer
  )
}

/** Runs an effect on the test clock, moving it a step at a time until the effect ends. */
export const withClock = <A, E, R>(effect: Effect.Effect<A, E, R>, step: Duration.DurationInput = "1 second") =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(effect)
    for (let i = 0; i < 10_000; i++) {
      if (Option.isSome(yield* Fiber.poll(fiber))) break
      yield* TestClock.adjust(step)
    }
    return yield* Fiber.join(fiber)
  })

/** Counts researcher calls in flight while each takes `seconds` on the test clock. */
export const countingResearcher = (seconds: number) =>
  Effect.gen(function* () {
    const inFlight = yield* Ref.make(0)
    const maxInFlight = yield* Ref.make(0)
    const script: ScriptedModel.Script = (request) =>
      Effect.gen(function* () {
        const now = yield* Ref.updateAndGet(inFlight, (n) => n + 1)
        yield* Ref.update(maxInFlight, (max) => Math.max(max, now))
        yield* Effect.sleep(Duration.seconds(seconds))
        yield* Ref.update(inFlight, (n) => n - 1)
        return researcherTurn(request)
      })
    return { script, maxInFlight }
  })
