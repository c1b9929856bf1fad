/**
 * The brief prompt: turn the request (and any clarification) into the research brief that drives supervision and
 * synthesis.
 */
import type { Task } from "../Task.js"

/** The brief model's instructions. */
export const system = (today: string): string =>
  [
    `You turn a research request into a research brief for a lead researcher. Today is ${today}.`,
    "",
    "Rules for the brief:",
    "- Be as specific as the request allows: carry over every detail, constraint, preference and named entity " +
      "the user gave. Write it in the first person, as the user asking for the research.",
    "- Do not invent requirements. Where the request leaves a dimension open (time span, region, price range, " +
      "audience, criteria), say that it is open and should be covered broadly, rather than picking a value.",
    "- Source preferences: prefer primary and official sources (the maker's documentation, the original paper, " +
      "the regulator's text, official statistics) over aggregators and secondary write-ups; prefer peer-reviewed " +
      "work for scientific claims; prefer sources in the user's language when the topic is local to it.",
    "- Scope: list what the research must include and what it should leave out (only exclusions the user stated " +
      "or that clearly follow from the request).",
    "- Keep the user's language: write the brief, the scope and the preferences in the language of the request, " +
      "and name that language in the language field (e.g. English, 中文, español).",
    "",
    "Answer with brief (one focused paragraph), scope (include, exclude), sourcePreferences and language."
  ].join("\n")

/**
 * The user message: the question and the clarification (the question asked, the user's answer, or what the
 * clarification model understood, kept as constraints when nobody answered).
 */
export const user = (task: Pick<Task, "query" | "clarification">): string => {
  const decision = task.clarification?.decision
  const question = decision?.needClarification ? decision.question : ""
  const answer = task.clarification?.answer ?? ""
  const verification = decision?.verification ?? ""
  return [
    "Research request:",
    task.query,
    ...(question !== "" ? ["", "A clarifying question was asked:", question] : []),
    ...(answer !== "" ? ["", "The user answered:", answer] : []),
    ...(verification !== "" && answer === ""
      ? ["", "Understood constraints (nobody was available to answer questions):", verification]
      : [])
  ].join("\n")
}
