/**
 * The web page of `deep-research serve`: ask a question (the options stay as set, question after question), list
 * sessions a page at a time (a simulated run's marked as such), watch one live (phase, round, researchers, sources,
 * tokens and cost), answer its clarifying question, cancel or resume it, read its report with citations linking to the
 * source list, and download it. The session shown is in the address (`?session=<id>`), so the back button and links
 * work, and `#source-n` anchors stay free for the citations.
 */
import * as Api from "./api.js"
import { byId, button, h } from "./dom.js"
import * as Progress from "./progress.js"
import { follow } from "./sse.js"
import * as FollowUp from "./followUp.js"
import * as Steering from "./steering.js"

const view = byId("view", HTMLElement)
const sessionsList = byId("sessions", HTMLUListElement)
const askForm = byId("ask", HTMLFormElement)
const askError = byId("ask-error", HTMLParagraphElement)
const questionField = byId("question", HTMLTextAreaElement)
const tokenForm = byId("token-form", HTMLFormElement)

let stopFollowing: (() => void) | undefined
let shown: string | undefined

// =============================================================================
// Sessions list
// =============================================================================

/** Sessions listed at first, and added by each "show older". */
const pageSize = 20
let listed = pageSize

const badge = (status: string) => h("span", { class: `badge ${status}` }, status.replace("_", " "))

/** The mark of a session a simulated run made: its report is no real research. */
const simulatedBadge = () =>
  h("span", { class: "badge simulated", title: "Made offline by the built-in emulator: no real research" }, "simulated")

const sessionItem = (s: Api.Json) => {
  const id = Api.str(s, "id") ?? ""
  const status = Api.str(s, "status") ?? ""
  const created = new Date(Api.num(s, "createdAt") ?? 0)
  const open = h(
    "button",
    { type: "button", "aria-current": id === shown ? "true" : undefined },
    h("span", { class: "q" }, Api.str(s, "query") ?? id),
    h(
      "span",
      { class: "meta" },
      badge(status),
      Api.bool(s, "simulated") === true && " ",
      Api.bool(s, "simulated") === true && simulatedBadge(),
      ` ${created.toLocaleString()}`
    )
  )
  open.addEventListener("click", () => navigate(id))
  return h("li", {}, open)
}

const refreshSessions = async (): Promise<void> => {
  const sessions = Api.list(await Api.call("GET", "/api/sessions"))
  const older = sessions.length - listed
  const more =
    older > 0 &&
    button(
      `Show ${Math.min(older, pageSize)} older (${older} more)`,
      () => {
        listed += pageSize
        return refreshSessions()
      },
      "secondary more"
    )
  sessionsList.replaceChildren(
    ...(sessions.length === 0 ? [h("li", { class: "hint" }, "No sessions yet.")] : []),
    ...sessions.slice(0, listed).map(sessionItem),
    ...(more === false ? [] : [h("li", {}, more)])
  )
}

// =============================================================================
// One session
// =============================================================================

const stats = (live: Progress.Live) =>
  h(
    "p",
    { class: "stats", "data-testid": "stats" },
    h("span", {}, "phase ", h("strong", { "data-testid": "phase" }, live.phase)),
    live.round > 0 && h("span", {}, "round ", h("strong", {}, String(live.round))),
    h("span", {}, h("strong", { "data-testid": "sources" }, String(live.sources)), " sources"),
    h("span", {}, h("strong", {}, Progress.formatTokens(live.tokens)), " tokens"),
    h("span", {}, h("strong", {}, Progress.formatCost(live.costUsd)))
  )

const researchers = (live: Progress.Live) =>
  live.researchers.size === 0
    ? undefined
    : h(
        "ul",
        { class: "researchers", "aria-label": "Researchers" },
        ...[...live.researchers.values()].map((r) =>
          h(
            "li",
            {},
            h("div", { class: "topic" }, `${r.status === "done" ? "✓" : r.status === "failed" ? "✗" : "›"} ${r.topic}`),
            h("div", { class: "doing" }, `${r.action} · ${r.sources} sources`)
          )
        )
      )

const clarificationForm = (sessionId: string, question: string) => {
  const input = h("input", { type: "text", id: "answer", required: true, autocomplete: "off" })
  const form = h(
    "form",
    { class: "card", "aria-labelledby": "clarify-title" },
    h("label", { id: "clarify-title", for: "answer" }, question),
    input,
    h("p", {}, h("button", { type: "submit" }, "Answer and continue"))
  )
  form.addEventListener("submit", async (event) => {
    event.preventDefault()
    await Api.call("POST", `/api/sessions/${encodeURIComponent(sessionId)}/answer`, { answer: input.value })
    await show(sessionId)
  })
  return form
}

const reportSection = async (sessionId: string): Promise<HTMLElement> => {
  const html = await Api.text(`/api/sessions/${encodeURIComponent(sessionId)}/report?format=fragment`)
  const parsed = new DOMParser().parseFromString(html, "text/html")
  const article = parsed.querySelector("article")
  const section = h("section", { "aria-label": "Report" })
  if (article !== null) section.append(document.importNode(article, true))
  return section
}

const actions = (sessionId: string, status: string) => {
  const path = `/api/sessions/${encodeURIComponent(sessionId)}`
  const running = status === "running" || status === "queued"
  // An export the server refuses (a PDF its font cannot show) says why under the buttons.
  const refused = h("p", { class: "error", role: "alert", hidden: true })
  const exported = (label: string, format: string) =>
    button(
      label,
      async () => {
        refused.hidden = true
        try {
          await Api.download(`${path}/export?format=${format}`, `deep-research-${sessionId}.${format}`)
        } catch (error) {
          refused.textContent = error instanceof Error ? error.message : String(error)
          refused.hidden = false
        }
      },
      "secondary"
    )
  return h(
    "div",
    { class: "actions" },
    running &&
      button(
        "Cancel",
        async () => {
          await Api.call("POST", `${path}/cancel`)
          await show(sessionId)
        },
        "danger"
      ),
    (status === "failed" || status === "cancelled") &&
      button("Resume", async () => {
        await Api.call("POST", `${path}/resume`)
        await show(sessionId)
      }),
    status === "completed" && exported("Download Markdown", "md"),
    status === "completed" &&
      button(
        "Download HTML",
        () => Api.download(`${path}/report?format=html&download=true`, `${sessionId}.html`),
        "secondary"
      ),
    status === "completed" && exported("Download PDF", "pdf"),
    status === "completed" && exported("Download Word", "docx"),
    status === "completed" && exported("Download JSON", "json"),
    !running &&
      button(
        "Delete",
        async () => {
          if (!confirm("Delete this session and its report?")) return
          await Api.call("DELETE", path)
          navigate(undefined)
        },
        "danger"
      ),
    refused
  )
}

/** Whether two texts say the same, whatever their spacing, case and closing punctuation. */
const sameText = (a: string, b: string): boolean => {
  const norm = (text: string) =>
    text
      .replace(/\s+/g, " ")
      .trim()
      .replace(/[?？.。!！]+$/, "")
      .toLowerCase()
  return norm(a) === norm(b)
}

const show = async (sessionId: string): Promise<void> => {
  stopFollowing?.()
  stopFollowing = undefined
  const path = `/api/sessions/${encodeURIComponent(sessionId)}`
  const status = await Api.call("GET", path)
  const state = Api.str(status, "status") ?? "unknown"
  const live = Progress.initial()
  const log = h("pre", { class: "log", "aria-label": "Progress log", tabindex: "0" })
  const liveView = h("div", { "data-testid": "live" })
  const researchersView = h("div")
  const draw = () => {
    liveView.replaceChildren(stats(live))
    researchersView.replaceChildren(researchers(live) ?? "")
    log.textContent = live.log.join("\n")
    log.scrollTop = log.scrollHeight
  }
  const question = Api.str(status, "query") ?? sessionId
  const report = state === "completed" ? await reportSection(sessionId) : undefined
  // A report whose title is the question says it once: its title is the heading.
  const title = report?.querySelector("h1")
  const header =
    title !== null && title !== undefined && sameText(title.textContent ?? "", question)
      ? undefined
      : h("h2", { class: "question", tabindex: "-1" }, question)
  title?.setAttribute("tabindex", "-1")
  const error = Api.str(status, "error")
  const clarification = Api.str(status, "clarificationQuestion")
  const plan: Api.Json = typeof status === "object" && status !== null ? Reflect.get(status, "plan") : undefined
  const removals = Steering.removalsView(status)
  const body: Array<Node> = [
    ...(header === undefined ? [] : [header]),
    h("p", {}, badge(state), " ", h("code", {}, sessionId)),
    actions(sessionId, state),
    ...(error === undefined ? [] : [h("p", { class: "error" }, error)]),
    ...(clarification === undefined ? [] : [clarificationForm(sessionId, clarification)]),
    ...(state === "awaiting_review" && plan !== undefined
      ? [Steering.reviewEditor(sessionId, plan, () => show(sessionId).then(refreshSessions))]
      : []),
    ...(removals === undefined ? [] : [removals]),
    liveView
  ]
  if (report !== undefined) {
    body.push(report, await FollowUp.section(sessionId, () => show(sessionId).then(refreshSessions)))
    body.push(h("details", {}, h("summary", {}, "How the research went"), researchersView, log))
  } else {
    body.push(researchersView, h("h3", {}, "Progress"), log)
  }
  view.replaceChildren(...body)
  draw()
  let pending = false
  stopFollowing = follow(sessionId, {
    onEvent: (data) => {
      Progress.apply(live, JSON.parse(data))
      // One redraw per frame however many events arrive.
      if (!pending) {
        pending = true
        requestAnimationFrame(() => {
          pending = false
          draw()
        })
      }
    },
    onEnd: () => {
      draw()
      if (state === "running" || state === "queued") void show(sessionId).then(refreshSessions)
    },
    onError: (message) => log.append(`\n${message}`)
  })
}

// =============================================================================
// Navigation and the question form
// =============================================================================

const navigate = (sessionId: string | undefined): void => {
  const url = sessionId === undefined ? "/" : `/?session=${encodeURIComponent(sessionId)}`
  history.pushState({}, "", url)
  void route(true)
}

const route = async (focus = false): Promise<void> => {
  const sessionId = new URLSearchParams(location.search).get("session") ?? undefined
  shown = sessionId
  if (sessionId === undefined) {
    stopFollowing?.()
    view.replaceChildren(
      h("p", { class: "hint" }, "Ask a question, or choose a session to watch it or read its report.")
    )
  } else {
    try {
      await show(sessionId)
      if (focus) view.querySelector<HTMLElement>("h2.question, article h1")?.focus()
    } catch (error) {
      view.replaceChildren(
        h("p", { class: "error", role: "alert" }, error instanceof Error ? error.message : String(error))
      )
    }
  }
  await refreshSessions().catch(() => {})
}

const numberField = (form: FormData, name: string): number | undefined => {
  const value = form.get(name)
  return typeof value === "string" && value.trim() !== "" ? Number(value) : undefined
}

askForm.addEventListener("submit", async (event) => {
  event.preventDefault()
  askError.hidden = true
  const form = new FormData(askForm)
  const body: Record<string, unknown> = { question: String(form.get("question") ?? "") }
  for (const name of ["maxRounds", "concurrency", "maxToolCalls", "budgetUsd", "budgetTokens"]) {
    const value = numberField(form, name)
    if (value !== undefined) body[name] = value
  }
  body["allowClarification"] = form.get("allowClarification") === "on"
  body["verify"] = form.get("verify") === "on"
  body["requireSources"] = form.get("requireSources") === "on"
  Object.assign(body, Steering.fromForm(form))
  try {
    const started = await Api.call("POST", "/api/sessions", body)
    // The next question starts blank; the options stay as they were set, for a series of questions alike.
    questionField.value = ""
    navigate(Api.str(started, "sessionId"))
  } catch (error) {
    askError.textContent = error instanceof Error ? error.message : String(error)
    askError.hidden = false
  }
})

Api.onUnauthorized.callback = () => {
  tokenForm.hidden = false
}
tokenForm.addEventListener("submit", (event) => {
  event.preventDefault()
  Api.setToken(byId("token", HTMLInputElement).value)
  tokenForm.hidden = true
  void route()
})

window.addEventListener("popstate", () => void route())
void route()
// Sessions others start (another tab, the API, the CLI) appear without a reload.
setInterval(() => void refreshSessions().catch(() => {}), 10_000)
