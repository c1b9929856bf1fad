/**
 * The research task: what the user asked (the question, the clarification, the settings) and what the brief made of
 * it (the brief, the report's language), as one value. The pipeline builds it from the session once the brief is
 * written and hands it down; every phase and prompt reads the task and takes only its own inputs beside it, so the
 * question and the brief are declared once and not again at each stop. It is derived from the session, which stores
 * its parts, so it is not stored itself; it lives below the phases and prompts that read it.
 */
import * as Language from "./internal/text/language.js"
import { Brief, type ClarificationRecord } from "./Research.js"
import type { ResearchConfig } from "./ResearchConfig.js"
import type { Session } from "./Session.js"
import type { Source } from "./Source.js"

/** What a research run works on, from the brief to the report. */
export interface Task {
  /** The user's question, as asked. */
  readonly query: string
  /** The clarification's decision and the user's answer, when there was one. */
  readonly clarification: ClarificationRecord | undefined
  /** What the clarification contributes as constraints: the answer, else the understanding. */
  readonly constraints: string | undefined
  /** The brief; undefined before it is written, and when the question stands in for it. */
  readonly brief: Brief | undefined
  /** The language the report is written in: the settings' `reportLanguage` when given, else the question's. */
  readonly language: Language.Language
  /**
   * The language of the question (the brief's when the question's text does not say): searches are made in it, since
   * the sources that answer a question are most often in the language it was asked in.
   */
  readonly questionLanguage: Language.Language
  /** The run's settings. */
  readonly config: ResearchConfig
  /** The sources the run took from the library before its first search (`library`): shown to every researcher. */
  readonly library: ReadonlyArray<Source>
}

/** What the clarification contributes to later phases as constraints: the answer, else the understanding. */
export const constraintsOf = (record: ClarificationRecord | undefined): string | undefined => {
  if (record === undefined) return undefined
  if (record.answer !== undefined && record.answer !== "") {
    return `Asked: ${record.decision.question}\nThe user answered: ${record.answer}`
  }
  return record.decision.verification === "" ? undefined : record.decision.verification
}

/** The task of a question with its settings, its clarification and its brief (each may be missing). */
export const make = (options: {
  readonly query: string
  readonly config: ResearchConfig
  readonly clarification?: ClarificationRecord | undefined
  readonly brief?: Brief | undefined
  readonly library?: ReadonlyArray<Source> | undefined
}): Task => {
  const questionLanguage = Language.forReport(options.query, options.brief?.language)
  const asked = options.config.reportLanguage
  return {
    query: options.query,
    clarification: options.clarification,
    constraints: constraintsOf(options.clarification),
    brief: options.brief,
    language: asked === undefined ? questionLanguage : Language.named(asked),
    questionLanguage,
    config: options.config,
    library: options.library ?? []
  }
}

/** What a finished session was later asked to research further (`continue`), as one paragraph; empty when nothing. */
export const directionsOf = (session: Session): string =>
  session.continuations.length === 0
    ? ""
    : `The user later asked to go deeper: ${session.continuations.map((c) => c.direction).join("; then: ")}`

/**
 * The task as the session holds it: its question, settings, clarification, brief and the library's sources; the directions a continuation
 * asked for are part of the brief (supervision and the report both read it), or of the constraints without a brief.
 */
export const fromSession = (session: Session): Task => {
  const directions = directionsOf(session)
  const task = make({
    query: session.query,
    config: session.config,
    clarification: session.clarification,
    brief:
      session.brief === undefined || directions === ""
        ? session.brief
        : new Brief({ ...session.brief, brief: `${session.brief.brief}\n\n${directions}` }, true),
    library: session.sources.filter((source) => source.origin !== undefined)
  })
  return session.brief !== undefined || directions === ""
    ? task
    : { ...task, constraints: [task.constraints, directions].filter((part) => part !== undefined).join("\n\n") }
}
