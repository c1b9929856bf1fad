/**
 * The brief prompt: turn the request (and any clarification) into the research brief that drives supervision and
 * synthesis.
 */

/** What the brief model knows besides the question. */
export interface BriefInput {
  readonly query: string
  readonly today: string
  /** The clarifying question that was asked, if any. */
  readonly question?: string | undefined
  /** The user's answer to it, if one came. */
  readonly answer?: string | undefined
  /** What the clarification model understood, kept as constraints when nobody answered. */
  readonly verification?: string | undefined
}

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

/** The user message. */
export const user = (input: BriefInput): string =>
  [
    "Research request:",
    input.query,
    ...(input.question !== undefined && input.question !== ""
      ? ["", "A clarifying question was asked:", input.question]
      : []),
    ...(input.answer !== undefined && input.answer !== "" ? ["", "The user answered:", input.answer] : []),
    ...(input.verification !== undefined && input.verification !== "" && (input.answer ?? "") === ""
      ? ["", "Understood constraints (nobody was available to answer questions):", input.verification]
      : [])
  ].join("\n")
