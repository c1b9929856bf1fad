/**
 * Renders the progress stream: a live view on a terminal (phase, round, each running researcher and what it is
 * doing, sources, tokens and cost), plain lines when not a terminal, and nothing but JSON lines with `--json`.
 */
import { printableLine } from "./internal/terminal/printable.js"
import { Novelty, ResearchEvents } from "@deep-research/core"

type Event = ResearchEvents.ResearchEvent

/** One researcher as the view shows it. */
export interface ResearcherView {
  readonly topic: string
  readonly action: string
  readonly sources: number
  readonly status: "running" | "done" | "failed"
}

/** What the view knows so far. */
export interface State {
  readonly sessionId: string | undefined
  readonly phase: string
  readonly round: number
  readonly researchers: ReadonlyMap<string, ResearcherView>
  /** Distinct sources: a page found by several researchers counts once, as the session keeps it once. */
  readonly sources: number
  readonly sourceUrls: ReadonlySet<string>
  readonly tokens: number
  readonly costUsd: number
  readonly notes: ReadonlyArray<string>
}

/** Nothing seen yet. */
export const initial: State = {
  sessionId: undefined,
  phase: "starting",
  round: 0,
  researchers: new Map(),
  sources: 0,
  sourceUrls: new Set(),
  tokens: 0,
  costUsd: 0,
  notes: []
}

const shorten = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1))}…`
}

const cut = (line: string, max: number): string =>
  line.length <= max ? line : `${line.slice(0, Math.max(0, max - 1))}…`

const withResearcher = (state: State, id: string, f: (view: ResearcherView | undefined) => ResearcherView): State => {
  const researchers = new Map(state.researchers)
  researchers.set(id, f(state.researchers.get(id)))
  return { ...state, researchers }
}

const note = (state: State, text: string): State => ({ ...state, notes: [...state.notes, text].slice(-5) })

/** Why supervision ends when nothing went wrong. */
const normalStops: ReadonlySet<string> = new Set(["research_complete", "no_tool_call", "no_directives"])

/** Folds one event into the view. */
export const reduce = (state: State, event: Event): State => {
  const base =
    state.sessionId === undefined && event.sessionId !== undefined ? { ...state, sessionId: event.sessionId } : state
  switch (event._tag) {
    case "PhaseStarted":
      return { ...base, phase: event.phase }
    case "RoundStarted":
      return { ...base, round: event.round, researchers: new Map() }
    case "ResearcherStarted":
      return withResearcher(base, event.directiveId, () => ({
        topic: event.topic,
        action: "starting",
        sources: 0,
        status: "running"
      }))
    case "ToolCalled":
      return withResearcher(base, event.directiveId, (view) => ({
        topic: view?.topic ?? event.directiveId,
        action: `${event.tool}: ${event.detail}`,
        sources: view?.sources ?? 0,
        status: "running"
      }))
    case "SourceFound": {
      const url = Novelty.normalizeUrl(event.url)
      const counted = base.sourceUrls.has(url)
        ? base
        : { ...base, sources: base.sources + 1, sourceUrls: new Set([...base.sourceUrls, url]) }
      return withResearcher(counted, event.directiveId, (view) => ({
        topic: view?.topic ?? event.directiveId,
        action: view?.action ?? "",
        sources: (view?.sources ?? 0) + 1,
        status: view?.status ?? "running"
      }))
    }
    case "ResearcherCompleted":
      return withResearcher(base, event.directiveId, (view) => ({
        topic: view?.topic ?? event.directiveId,
        action: `done (${event.stopReason})`,
        sources: view?.sources ?? event.sources,
        status: "done"
      }))
    case "ResearcherFailed":
      return withResearcher(base, event.directiveId, (view) => ({
        topic: view?.topic ?? event.directiveId,
        action: `failed: ${event.error}`,
        sources: view?.sources ?? 0,
        status: "failed"
      }))
    case "UsageUpdated":
      return { ...base, tokens: event.tokens, costUsd: event.costUsd }
    case "PhaseCompleted":
      return base
    case "Retrying":
      return note(base, `${event.provider}: retrying in ${Math.round(event.delayMillis / 100) / 10}s (${event.error})`)
    case "CircuitChanged":
      return note(base, `${event.provider}: circuit ${event.state.replace("_", "-")}`)
    case "ProviderSkipped":
      return note(base, `${event.provider} skipped: ${event.reason}`)
    case "ToolCallRejected":
      return note(base, rejectedLine(event))
    case "ModelFallback":
      return note(base, fallbackLine(event))
    case "BudgetWarning":
      return note(base, budgetLine(event))
    case "SupervisionStopped":
      // Research that ends as it should is no warning; one cut short by a limit or a failure is.
      return normalStops.has(event.reason) ? base : note(base, `research stopped: ${event.reason}`)
    case "ReportWritten":
      return event.sources === 0 ? note(base, ungroundedLine(event.ungrounded)) : base
    case "SessionCompleted":
      return { ...base, phase: "completed" }
    case "SessionFailed":
      return note({ ...base, phase: "failed" }, event.error)
    case "SessionCancelled":
      return { ...base, phase: "cancelled" }
    case "SessionAwaitingClarification":
      return { ...base, phase: "waiting for an answer" }
    case "SessionAwaitingReview":
      return { ...base, phase: "waiting for review" }
    case "ReportPlanned":
      return { ...base, phase: `synthesis: ${count(event.sections.length, "section")} planned` }
    case "ReportSectionWritten":
      return { ...base, phase: `synthesis: ${reportPartLine(event)}` }
    case "PlanReviewed":
      return event.decision === "unanswered" ? note(base, unreviewedLine) : base
    default:
      return base
  }
}

/** `1 source`, `2 sources`: a count and its noun, in the singular for one. */
const count = (n: number, singular: string, plural = `${singular}s`): string => `${n} ${n === 1 ? singular : plural}`

const formatCost = (usd: number): string => (usd === 0 ? "$0" : usd < 0.01 ? "<$0.01" : `$${usd.toFixed(2)}`)

const formatTokens = (tokens: number): string =>
  tokens >= 1_000_000
    ? `${(tokens / 1_000_000).toFixed(1)}M`
    : tokens >= 1_000
      ? `${(tokens / 1_000).toFixed(1)}k`
      : `${tokens}`

/** The live view as lines, each at most `width` characters. */
export const renderLive = (state: State, width: number): ReadonlyArray<string> => {
  const head = [
    `deep-research ${state.sessionId ?? ""}`.trim(),
    `phase ${state.phase}${state.round > 0 ? ` · round ${state.round}` : ""} · ${count(state.sources, "source")} · ${formatTokens(state.tokens)} tokens · ${formatCost(state.costUsd)}`
  ]
  const researchers = [...state.researchers.values()].map((view) => {
    const mark = view.status === "running" ? "›" : view.status === "done" ? "✓" : "✗"
    return `  ${mark} ${shorten(view.topic, 48)} — ${shorten(view.action, 60)} · ${count(view.sources, "source")}`
  })
  return [...head, ...researchers, ...state.notes.map((n) => `  ! ${shorten(n, width)}`)].map((line) =>
    cut(printableLine(line), width)
  )
}

/** A tool call the library could not use: which unit, which tool, and the first line of why. */
const rejectedLine = (event: Extract<Event, { readonly _tag: "ToolCallRejected" }>): string => {
  const reason = event.error.split("\n").find((line) => line.trim() !== "" && !line.startsWith("This directive")) ?? ""
  return `${event.unit}: a ${event.tool} call was rejected: ${shorten(reason.trim(), 160)}`
}

/** The warning of a report that rests on no source. */
const ungroundedLine = (reason: string | undefined): string =>
  `the report rests on no source${reason === undefined ? "" : ` (${reason.replaceAll("_", " ")})`}`

/** What the budget did: one line for each thing that happened, never the same line twice. */
const budgetLine = (event: Extract<Event, { readonly _tag: "BudgetWarning" }>): string => {
  const usd = (value: number) => `$${value.toFixed(value < 1 ? 4 : 2)}`
  const spent =
    event.budget === "usd"
      ? `${usd(event.spent)} of ${usd(event.limit)} spent`
      : `${Math.round(event.spent)} of ${Math.round(event.limit)} tokens spent`
  switch (event.level) {
    case "warning":
      return `budget: ${spent}, 80% of what research may use`
    case "research_stopped":
      return `budget: ${spent}; research stops, the rest is kept for the report`
    case "report_short":
      return `budget: ${spent}; too little is left for a report, the findings are given as they are`
  }
}

/** A model that goes on without a capability its server refused. */
const fallbackLine = (event: Extract<Event, { readonly _tag: "ModelFallback" }>): string =>
  event.capability === "toolCalling"
    ? `${event.provider} ${event.model} has no tool calling here; it acts through the JSON action protocol from now on`
    : `${event.provider} ${event.model} takes no JSON schema here; structured answers are asked for in the prompt from now on`

/** What a run that was to be reviewed and could not be says. */
const unreviewedLine = "the plan was not reviewed: nobody can answer here, so research goes on as planned"

/** A part of a long report, written: a section (its place and title), the introduction or the conclusion. */
const reportPartLine = (event: Extract<Event, { readonly _tag: "ReportSectionWritten" }>): string =>
  event.part === "section"
    ? `section ${event.index}/${event.sections} written: ${shorten(event.title, 80)} (${count(event.words, "word")})`
    : `${event.part} written (${count(event.words, "word")})`

/** A plain line for an event worth a line when not on a terminal. */
export const plainLine = (event: Event): string | undefined => {
  switch (event._tag) {
    case "SessionStarted":
      return `session ${event.sessionId ?? ""} started: ${shorten(event.query, 100)}`
    case "PhaseStarted":
      return `phase ${event.phase}`
    case "PhaseCompleted":
      return `phase ${event.phase} done in ${(event.durationMillis / 1000).toFixed(1)}s (${count(event.calls, "call")}, ${formatTokens(event.tokens)} tokens, ${formatCost(event.costUsd)})`
    case "ClarificationAsked":
      return `clarification: ${event.question}`
    case "BriefWritten":
      return `brief${event.fallback ? " (fell back to the question)" : ""}: ${shorten(event.brief, 160)}`
    case "RoundStarted":
      return `round ${event.round}`
    case "DirectiveIssued":
      return `  directive ${event.directiveId} (priority ${event.priority}): ${shorten(event.topic, 120)}`
    case "ToolCalled":
      return `  ${event.directiveId} ${event.tool}: ${shorten(event.detail, 120)}`
    case "ToolCallRejected":
      return `  ! ${rejectedLine(event)}`
    case "ModelFallback":
      return `  ! ${fallbackLine(event)}`
    case "ResearcherCompleted":
      return `  ${event.directiveId} done: ${count(event.sources, "source")}, ${count(event.toolCalls, "tool call")} (${event.stopReason})`
    case "ResearcherFailed":
      return `  ${event.directiveId} failed: ${event.error}`
    case "RoundCompleted":
      return `round ${event.round} done: ${event.completed} completed, ${event.failed} failed`
    case "SupervisionStopped":
      return `research stopped after ${count(event.rounds, "round")}: ${event.reason}`
    case "Retrying":
      return `  ${event.provider}: attempt ${event.attempt} failed (${event.error}), retrying in ${(event.delayMillis / 1000).toFixed(1)}s`
    case "CircuitChanged":
      return `  ${event.provider}: circuit ${event.state.replace("_", "-")}`
    case "ProviderSkipped":
      return `  ${event.provider} skipped: ${event.reason}`
    case "BudgetWarning":
      return budgetLine(event)
    case "ReportWritten":
      return `report written: ${count(event.characters, "character")}, ${count(event.citations, "citation")}${event.droppedCitations > 0 ? ` (${event.droppedCitations} unverifiable removed)` : ""}${event.sources === 0 ? `; warning: ${ungroundedLine(event.ungrounded)}` : ""}`
    case "SessionAwaitingClarification":
      return `waiting for an answer: ${event.question}`
    case "SessionAwaitingReview":
      return `waiting for the plan's review: ${count(event.directives.length, "directive")}`
    case "PlanReviewed":
      return event.decision === "unanswered" ? unreviewedLine : `plan ${event.decision}`
    case "ReportPlanned":
      return `report planned: ${count(event.sections.length, "section")}, about ${event.words} words: ${shorten(event.sections.join("; "), 200)}`
    case "ReportSectionWritten":
      return `  ${reportPartLine(event)}`
    case "SourcesRemoved":
      return `  source policy: ${count(event.removed, "result")} left out (${event.total} in all)`
    case "SessionCompleted":
      return `completed in ${(event.durationMillis / 1000).toFixed(1)}s, ${formatTokens(event.tokens)} tokens, ${formatCost(event.costUsd)}`
    case "SessionFailed":
      return `failed: ${event.error}`
    case "SessionCancelled":
      return "cancelled"
    default:
      return undefined
  }
}

/**
 * The line that says which sources a run searches; when no search key chose them, that they are the keyless set and
 * how to name others.
 */
export const searchLine = (search: ReadonlyArray<string>, keylessDefault: boolean): string =>
  keylessDefault
    ? `searching ${search.join(", ")}: no search key is set, so the sources that need none (choose others with --search)`
    : `searching ${search.join(", ")}`

/** How progress is shown. */
export type Mode = "live" | "plain" | "json"

/** Where output goes. */
export interface Sink {
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  readonly width: () => number
}

/** A renderer: feed it events, then finish it once. */
export interface Renderer {
  readonly onEvent: (event: Event) => void
  /** A line that is not an event (a warning): above the live view, on stderr in the other modes. */
  readonly log: (line: string) => void
  /** Takes the live view off the screen until `resume` (while a question is asked on the terminal). */
  readonly pause: () => void
  readonly resume: () => void
  readonly finish: () => void
}

/** Makes a renderer for a mode. The live view redraws in place on `err`, at most every `intervalMillis`. */
export const makeRenderer = (mode: Mode, sink: Sink, intervalMillis = 100): Renderer => {
  const noop = () => {}
  const logLine = (line: string) => sink.err(`${line}\n`)
  if (mode === "json") {
    return {
      onEvent: (event) => sink.out(`${ResearchEvents.encodeJson(event)}\n`),
      log: logLine,
      pause: noop,
      resume: noop,
      finish: noop
    }
  }
  if (mode === "plain") {
    return {
      onEvent: (event) => {
        const line = plainLine(event)
        if (line !== undefined) sink.err(`${printableLine(line)}\n`)
      },
      log: logLine,
      pause: noop,
      resume: noop,
      finish: noop
    }
  }
  let state = initial
  let drawn = 0
  let paused = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const clear = () => {
    if (drawn > 0) sink.err(`\x1b[${drawn}F\x1b[J`)
    drawn = 0
  }
  const draw = () => {
    timer = undefined
    if (paused) return
    const lines = renderLive(state, Math.max(20, sink.width() - 1))
    clear()
    sink.err(`${lines.join("\n")}\n`)
    drawn = lines.length
  }
  const schedule = () => {
    if (timer === undefined && !paused) timer = setTimeout(draw, intervalMillis)
  }
  return {
    onEvent: (event) => {
      state = reduce(state, event)
      schedule()
    },
    log: (line) => {
      clear()
      logLine(line)
      schedule()
    },
    pause: () => {
      paused = true
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      clear()
    },
    resume: () => {
      paused = false
      schedule()
    },
    finish: () => {
      if (timer !== undefined) clearTimeout(timer)
      paused = false
      draw()
    }
  }
}
