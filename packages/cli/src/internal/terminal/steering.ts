/**
 * What `show` says of how a session was steered: its source policy and what the policy left out (a count per reason,
 * and each URL with its reason), and the review of its plan (waiting, or how it went).
 */
import * as Review from "@deep-research/core/Review"
import type * as Session from "@deep-research/core/Session"
import * as SourcePolicy from "@deep-research/core/SourcePolicy"

const reasonWords: Readonly<Record<SourcePolicy.RemovalReason, string>> = {
  excluded_domain: "excluded domain",
  outside_included_domains: "not an included domain",
  before_since: "before --since",
  after_until: "after --until",
  undated: "no known date",
  kind: "not a kind asked for"
}

/** The policy in one line, or undefined when the session has none. */
const policyLine = (session: Session.Session): string | undefined => {
  const policy = SourcePolicy.fromSettings(session.config)
  if (!SourcePolicy.isActive(policy)) return undefined
  const parts = [
    policy.includeDomains.length > 0 ? `only ${policy.includeDomains.join(", ")}` : "",
    policy.excludeDomains.length > 0 ? `never ${policy.excludeDomains.join(", ")}` : "",
    policy.since !== undefined ? `since ${policy.since}` : "",
    policy.until !== undefined ? `until ${policy.until}` : "",
    policy.sources.length > 0 ? `kinds ${policy.sources.join(", ")}` : ""
  ].filter((part) => part !== "")
  return `Source policy: ${parts.join("; ")}`
}

/** The lines `show` gives for the session's steering (none when it had none). */
export const steeringLines = (session: Session.Session): ReadonlyArray<string> => {
  const lines: Array<string> = []
  const policy = policyLine(session)
  if (policy !== undefined) lines.push(policy)
  const removals = session.sourcePolicyRemovals
  if (policy !== undefined || removals !== undefined) {
    const total = removals?.total ?? 0
    const counts = SourcePolicy.RemovalReason.literals
      .filter((reason) => (removals?.counts[reason] ?? 0) > 0)
      .map((reason) => `${reasonWords[reason]} ${removals?.counts[reason] ?? 0}`)
    lines.push(`Left out by the source policy: ${total}${counts.length > 0 ? ` (${counts.join(", ")})` : ""}`)
    for (const removal of removals?.urls ?? []) lines.push(`  - ${removal.url} (${reasonWords[removal.reason]})`)
  }
  if (session.config.reportLanguage !== undefined) lines.push(`Report language: ${session.config.reportLanguage}`)
  const { reportInstructions, reportOutline, reportWords } = session.config
  if (reportWords !== undefined) lines.push(`Report length: about ${reportWords} words`)
  if (reportOutline !== undefined) lines.push(`Report sections: ${reportOutline.join("; ")}`)
  if (reportInstructions !== undefined) lines.push(`Report instructions: ${reportInstructions}`)
  const borrowed = session.sources.filter((source) => source.origin !== undefined)
  if (session.config.library === true) {
    const from = [...new Set(borrowed.map((source) => source.origin?.sessionId))].join(", ")
    lines.push(
      borrowed.length === 0
        ? "From the library: nothing matched"
        : `From the library: ${borrowed.length} source${borrowed.length === 1 ? "" : "s"} of session ${from}`
    )
  }
  const plan = Review.planOf(session)
  if (session.status === "awaiting_review" && plan !== undefined) {
    lines.push(
      Review.describe(plan),
      `Waiting for the plan's review: deep-research resume ${session.id} (on a terminal)`
    )
  } else if (session.review !== undefined) {
    lines.push(`Plan review: ${session.review.decision}`)
  }
  return lines
}
