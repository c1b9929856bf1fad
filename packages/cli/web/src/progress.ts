/** A session's live view, folded from its progress events (the JSON of the server's `ResearchEvent`). */
import { type Json, list, num, str } from "./api.js"

export interface Researcher {
  topic: string
  action: string
  sources: number
  status: "running" | "done" | "failed"
}

export interface Live {
  phase: string
  round: number
  /** Distinct pages: one found by several researchers counts once, as the session keeps it once. */
  sources: number
  sourceUrls: Set<string>
  tokens: number
  costUsd: number
  researchers: Map<string, Researcher>
  log: Array<string>
  clarification: string | undefined
}

/** A URL as two finds of the same page write it alike: no fragment, no trailing slash, the host in lower case. */
const sameUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    parsed.hash = ""
    return parsed.href.replace(/\/+$/, "").toLowerCase()
  } catch {
    return url
  }
}

export const initial = (): Live => ({
  phase: "starting",
  round: 0,
  sources: 0,
  sourceUrls: new Set(),
  tokens: 0,
  costUsd: 0,
  researchers: new Map(),
  log: [],
  clarification: undefined
})

const researcher = (live: Live, id: string): Researcher => {
  const known = live.researchers.get(id)
  if (known !== undefined) return known
  const fresh: Researcher = { topic: id, action: "starting", sources: 0, status: "running" }
  live.researchers.set(id, fresh)
  return fresh
}

const line = (event: Json): string | undefined => {
  const tag = str(event, "_tag")
  switch (tag) {
    case "SessionStarted":
      return `started: ${str(event, "query") ?? ""}`
    case "PhaseStarted":
      return `phase ${str(event, "phase") ?? ""}`
    case "BriefWritten":
      return `brief: ${str(event, "brief") ?? ""}`
    case "RoundStarted":
      return `round ${num(event, "round") ?? ""}`
    case "DirectiveIssued":
      return `directive: ${str(event, "topic") ?? ""}`
    case "ToolCalled":
      return `${str(event, "directiveId") ?? ""} ${str(event, "tool") ?? ""}: ${str(event, "detail") ?? ""}`
    case "ResearcherFailed":
      return `${str(event, "directiveId") ?? ""} failed: ${str(event, "error") ?? ""}`
    case "Retrying":
      return `${str(event, "provider") ?? ""}: retrying (${str(event, "error") ?? ""})`
    case "SupervisionStopped":
      return `research stopped: ${str(event, "reason") ?? ""}`
    case "ReportWritten":
      return `report written: ${num(event, "citations") ?? 0} citations`
    case "ReportPlanned":
      return `report planned: ${list(event, "sections").length} sections`
    case "ReportSectionWritten":
      return str(event, "part") === "section"
        ? `section ${num(event, "index") ?? ""}/${num(event, "sections") ?? ""} written: ${str(event, "title") ?? ""}`
        : `${str(event, "part") ?? ""} written`
    case "SessionCompleted":
      return "completed"
    case "SessionFailed":
      return `failed: ${str(event, "error") ?? ""}`
    case "SessionCancelled":
      return "cancelled"
    case "SessionAwaitingClarification":
      return `waiting for an answer: ${str(event, "question") ?? ""}`
    default:
      return undefined
  }
}

/** Folds one event into the view. */
export const apply = (live: Live, event: Json): void => {
  const tag = str(event, "_tag")
  const id = str(event, "directiveId") ?? ""
  switch (tag) {
    case "PhaseStarted":
      live.phase = str(event, "phase") ?? live.phase
      break
    case "RoundStarted":
      live.round = num(event, "round") ?? live.round
      live.researchers = new Map()
      break
    case "ResearcherStarted":
      live.researchers.set(id, { topic: str(event, "topic") ?? id, action: "starting", sources: 0, status: "running" })
      break
    case "ToolCalled":
      researcher(live, id).action = `${str(event, "tool") ?? ""}: ${str(event, "detail") ?? ""}`
      break
    case "SourceFound": {
      const url = sameUrl(str(event, "url") ?? "")
      if (!live.sourceUrls.has(url)) {
        live.sourceUrls.add(url)
        live.sources++
      }
      researcher(live, id).sources++
      break
    }
    case "ResearcherCompleted": {
      const r = researcher(live, id)
      r.status = "done"
      r.action = `done (${str(event, "stopReason") ?? ""})`
      break
    }
    case "ResearcherFailed": {
      const r = researcher(live, id)
      r.status = "failed"
      r.action = `failed: ${str(event, "error") ?? ""}`
      break
    }
    case "UsageUpdated":
      live.tokens = num(event, "tokens") ?? live.tokens
      live.costUsd = num(event, "costUsd") ?? live.costUsd
      break
    case "SessionAwaitingClarification":
      live.phase = "waiting for an answer"
      live.clarification = str(event, "question")
      break
    case "SessionCompleted":
      live.phase = "completed"
      break
    case "SessionFailed":
      live.phase = "failed"
      break
    case "SessionCancelled":
      live.phase = "cancelled"
      break
  }
  const text = line(event)
  if (text !== undefined) live.log.push(text.length > 240 ? `${text.slice(0, 239)}…` : text)
  if (live.log.length > 200) live.log.splice(0, live.log.length - 200)
}

/** Tokens as people read them. */
export const formatTokens = (tokens: number): string =>
  tokens >= 1_000_000
    ? `${(tokens / 1_000_000).toFixed(1)}M`
    : tokens >= 1_000
      ? `${(tokens / 1_000).toFixed(1)}k`
      : `${tokens}`

/** A cost as people read it. */
export const formatCost = (usd: number): string => (usd === 0 ? "$0" : usd < 0.01 ? "<$0.01" : `$${usd.toFixed(2)}`)
