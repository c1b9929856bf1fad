/** The lines that end a research run in the terminal, the same whether it ran here or on the cluster's runners. */
import type { Session } from "@deep-research/core"

/** Where the report went, which session it is and where that is kept, and what the run found and cost. */
export const reportSummary = (
  session: Session.Session,
  options: { readonly out: string; readonly kept: string; readonly simulate: boolean }
): string => {
  const cost = session.usage.reduce((n, r) => n + r.costUsd, 0)
  const tokens = session.usage.reduce((n, r) => n + r.inputTokens + r.outputTokens, 0)
  return [
    `${options.simulate ? "[simulated] " : ""}Report: ${options.out}`,
    `Session: ${session.id} (${options.kept})`,
    `Sources: ${session.sources.length}, citations: ${session.report?.citations.length ?? 0}, tokens: ${tokens}, ` +
      `cost: $${cost.toFixed(4)}${options.simulate ? " (simulated: no real model or web was used)" : ""}`
  ].join("\n")
}
