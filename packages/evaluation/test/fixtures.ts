/** Sessions and sources for the evaluation tests. */
import { Research, ResearchConfig, Session, Source, Usage } from "@deep-research/core"

export const source = (id: string, url: string, title: string, content: string): Source.Source =>
  new Source.Source({
    id,
    url,
    title,
    content,
    provider: "static",
    quality: "high",
    retrievedAt: 0,
    rawLength: content.length
  })

export interface SessionParts {
  readonly id?: string
  readonly query?: string
  readonly status?: Session.Status
  readonly markdown?: string | undefined
  readonly sources?: ReadonlyArray<Source.Source>
  readonly citations?: ReadonlyArray<Research.Citation>
  readonly usage?: ReadonlyArray<Usage.RoleUsage>
  readonly findings?: ReadonlyArray<string>
  readonly brief?: string
}

export const session = (parts: SessionParts = {}): Session.Session =>
  new Session.Session({
    version: Session.currentVersion,
    id: parts.id ?? "s1",
    query: parts.query ?? "What moves the gold price?",
    createdAt: 0,
    updatedAt: 0,
    config: ResearchConfig.defaults,
    status: parts.status ?? "completed",
    ...(parts.brief === undefined
      ? {}
      : {
          brief: new Research.Brief({
            brief: parts.brief,
            scope: new Research.Scope({ include: [], exclude: [] }),
            sourcePreferences: [],
            language: "English"
          })
        }),
    rounds:
      parts.findings === undefined
        ? []
        : [
            new Research.SupervisionRound({
              round: 1,
              directives: [],
              completed: true,
              results: parts.findings.map(
                (findings, i) =>
                  new Research.TopicResult({
                    directiveId: `d${i + 1}`,
                    status: "completed",
                    findings,
                    supervisorSummary: "",
                    sourceIds: [],
                    stopReason: "complete",
                    toolCalls: 1,
                    turns: 1,
                    compressed: true
                  })
              )
            })
          ],
    sources: parts.sources ?? [],
    ...(parts.markdown === undefined
      ? {}
      : {
          report: new Research.Report({
            title: "Report",
            markdown: parts.markdown,
            citations: parts.citations ?? [],
            language: "English",
            droppedCitations: 0
          })
        }),
    metrics: [],
    usage: parts.usage ?? []
  })

export const roleUsage = (role: Usage.Role, inputTokens: number, outputTokens: number, costUsd: number) =>
  new Usage.RoleUsage({
    role,
    calls: 1,
    inputTokens,
    outputTokens,
    cachedInputTokens: 0,
    reasoningTokens: 0,
    costUsd
  })
