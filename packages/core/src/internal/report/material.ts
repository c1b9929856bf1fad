/**
 * What a report is written from: the sources its findings rest on, numbered once across the report, and each topic's
 * findings citing them. Made by synthesis (`phases/Synthesis.ts`), read by the writing of a report in one call and by
 * the writing of a long one section by section (`phases/ReportSections.ts`).
 */
import type { Source } from "../../Source.js"

/** One topic's findings with citations numbered against the report's source list. */
export interface TopicFindings {
  readonly topic: string
  readonly findings: string
}

/** The material of the report: numbered sources and the findings citing them. */
export interface Material {
  readonly sources: ReadonlyArray<Source>
  readonly topics: ReadonlyArray<TopicFindings>
}
