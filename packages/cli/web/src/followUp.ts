/**
 * Under a finished report: the thread of follow-up answers (each question, its answer as text with its sources under
 * the session's numbers), a box to ask another (`POST /api/sessions/{id}/ask`) and one to go deeper in a new direction
 * (`POST /api/sessions/{id}/continue`), which reopens the session's research.
 */
import * as Api from "./api.js"
import { h } from "./dom.js"

const answerView = (answer: Api.Json): HTMLElement => {
  const sources = Api.list(answer, "citations").map((citation) => {
    const url = Api.str(citation, "url") ?? ""
    const link = h(
      "a",
      { href: /^https?:\/\//.test(url) ? url : undefined, rel: "noreferrer" },
      Api.str(citation, "title") ?? url
    )
    return h("li", {}, `[${Api.num(citation, "number") ?? "?"}] `, link)
  })
  return h(
    "article",
    { class: "follow-up" },
    h("h4", {}, Api.str(answer, "question") ?? ""),
    h("pre", { class: "answer" }, Api.str(answer, "markdown") ?? ""),
    ...(sources.length > 0 ? [h("ul", { class: "sources" }, ...sources)] : [])
  )
}

/** The thread, the ask box and the go-deeper box of a completed session; `reopened` runs once a continuation began. */
export const section = async (sessionId: string, reopened: () => Promise<void>): Promise<HTMLElement> => {
  const path = `/api/sessions/${encodeURIComponent(sessionId)}`
  const thread = h("div", { "data-testid": "thread" })
  const answers = Api.list(await Api.call("GET", `${path}/answers`))
  thread.replaceChildren(...answers.map(answerView))
  const error = h("p", { class: "error", role: "alert", hidden: true })
  const failed = (failure: unknown) => {
    error.textContent = failure instanceof Error ? failure.message : String(failure)
    error.hidden = false
  }
  const question = h("input", {
    id: "follow-up-question",
    type: "text",
    required: true,
    "aria-label": "Follow-up question"
  })
  const ask = h("form", { class: "ask" }, question, h("button", { type: "submit" }, "Ask"))
  ask.addEventListener("submit", async (event) => {
    event.preventDefault()
    error.hidden = true
    try {
      thread.append(answerView(await Api.call("POST", `${path}/ask`, { question: question.value })))
      question.value = ""
    } catch (failure) {
      failed(failure)
    }
  })
  const direction = h("input", { id: "continue-direction", type: "text", required: true, "aria-label": "Direction" })
  const deeper = h(
    "form",
    { class: "continue" },
    direction,
    h("button", { type: "submit", class: "secondary" }, "Go deeper")
  )
  deeper.addEventListener("submit", async (event) => {
    event.preventDefault()
    error.hidden = true
    try {
      await Api.call("POST", `${path}/continue`, { direction: direction.value })
      await reopened()
    } catch (failure) {
      failed(failure)
    }
  })
  return h(
    "section",
    { class: "after-report", "aria-label": "Follow-up questions" },
    h("h3", {}, "Follow-up questions"),
    thread,
    h("label", { for: "follow-up-question" }, "Ask about what this research found (answered from its sources)"),
    ask,
    h("label", { for: "continue-direction" }, "Or go deeper in a new direction (more research; a new report version)"),
    deeper,
    error
  )
}
