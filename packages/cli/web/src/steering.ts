/**
 * Steering a run from the page: the source policy, the review and the report's shape asked for with a question
 * (`fromForm`), the editor of a plan waiting for its review (approve, edit the brief and the directives: change, drop,
 * add; or cancel), and what the source policy left out of a session (a count per reason, and each URL with its reason).
 */
import * as Api from "./api.js"
import { button, h } from "./dom.js"

const listOf = (text: string): ReadonlyArray<string> =>
  text
    .split(/[,\s]+/)
    .map((part) => part.trim())
    .filter((part) => part !== "")

/** The steering fields of the question form, by the API's names; only those given. */
export const fromForm = (form: FormData): Record<string, unknown> => {
  const body: Record<string, unknown> = {}
  const text = (name: string) => String(form.get(name) ?? "").trim()
  for (const name of ["includeDomains", "excludeDomains"]) {
    const domains = listOf(text(name))
    if (domains.length > 0) body[name] = domains
  }
  for (const name of ["since", "until", "reportLanguage"]) if (text(name) !== "") body[name] = text(name)
  const kinds = form.getAll("sources").map(String)
  if (kinds.length > 0) body["sources"] = kinds
  if (form.get("review") === "on") body["review"] = true
  // The report's shape: its length in words, its sections (titles separated by `;`) and the writer's instructions.
  if (text("words") !== "") body["words"] = Number(text("words"))
  const outline = text("outline")
    .split(";")
    .map((title) => title.trim())
    .filter((title) => title !== "")
  if (outline.length > 0) body["outline"] = outline
  if (text("instructions") !== "") body["instructions"] = text("instructions")
  return body
}

/** The editor of a plan waiting for its review; `done` runs once the server took the decision. */
export const reviewEditor = (sessionId: string, plan: Api.Json, done: () => Promise<void>): HTMLElement => {
  const path = `/api/sessions/${encodeURIComponent(sessionId)}/review`
  const brief = h("textarea", { id: "review-brief", rows: "4" })
  brief.value = Api.str(plan, "brief") ?? ""
  const directives = h("ol", { class: "directives", "aria-label": "Directives" })
  const addDirective = (topic: string) => {
    const field = h("textarea", { rows: "3", "aria-label": "Directive" })
    field.value = topic
    const item = h("li", {}, field)
    item.append(button("Drop", () => item.remove(), "secondary"))
    directives.append(item)
  }
  for (const topic of Api.list(plan, "directives")) if (typeof topic === "string") addDirective(topic)
  const error = h("p", { class: "error", role: "alert", hidden: true })
  const send = async (decision: Record<string, unknown>) => {
    try {
      await Api.call("POST", path, decision)
      await done()
    } catch (failure) {
      error.textContent = failure instanceof Error ? failure.message : String(failure)
      error.hidden = false
    }
  }
  const edited = () => ({
    action: "edit",
    brief: brief.value,
    directives: [...directives.querySelectorAll("textarea")].map((field) => field.value).filter((t) => t.trim() !== "")
  })
  return h(
    "section",
    { class: "card review", "aria-labelledby": "review-title" },
    h("h3", { id: "review-title" }, "Review the plan before any search"),
    h("label", { for: "review-brief" }, "Brief"),
    brief,
    h("p", {}, "Directives, one researcher each:"),
    directives,
    h(
      "p",
      { class: "actions" },
      button("Add a directive", () => addDirective(""), "secondary"),
      button("Approve", () => send({ action: "approve" })),
      button("Save edits and research", () => send(edited())),
      button("Cancel the run", () => send({ action: "cancel" }), "danger")
    ),
    error
  )
}

const reasonWords: Readonly<Record<string, string>> = {
  excluded_domain: "excluded domain",
  outside_included_domains: "not an included domain",
  before_since: "before the window",
  after_until: "after the window",
  undated: "no known date",
  kind: "not a kind asked for"
}

/** What the source policy left out, or nothing when it left nothing out. */
export const removalsView = (status: Api.Json): HTMLElement | undefined => {
  const removals: Api.Json =
    typeof status === "object" && status !== null ? Reflect.get(status, "sourcePolicyRemovals") : undefined
  const total = Api.num(removals, "total") ?? 0
  if (total === 0) return undefined
  const counts: Api.Json = typeof removals === "object" && removals !== null ? Reflect.get(removals, "counts") : {}
  const parts = Object.keys(reasonWords)
    .map((reason) => [reason, Api.num(counts, reason) ?? 0] as const)
    .filter(([, n]) => n > 0)
    .map(([reason, n]) => `${reasonWords[reason]} ${n}`)
  return h(
    "details",
    { class: "removals", "data-testid": "removals" },
    h("summary", {}, `Left out by the source policy: ${total} (${parts.join(", ")})`),
    h(
      "ul",
      {},
      ...Api.list(removals, "urls").map((removal) =>
        h(
          "li",
          {},
          h("code", {}, Api.str(removal, "url") ?? ""),
          ` ${reasonWords[Api.str(removal, "reason") ?? ""] ?? ""}`
        )
      )
    )
  )
}
