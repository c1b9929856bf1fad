/**
 * The researcher: a tool-calling agent that investigates one directive of the supervisor with web search, page
 * extraction and reflection, then reports what it found with numbered citations.
 */
import type { Directive } from "../Research.js"
import type { ResearchConfig } from "../ResearchConfig.js"
import type { Task } from "../Task.js"
import * as Untrusted from "./untrusted.js"

/** The sizes of the researcher's tools, as its instructions state them. */
export type Limits = Pick<ResearchConfig, "researcherMaxToolCalls" | "maxQueriesPerSearch" | "maxUrlsPerExtract">

/**
 * Ending in the same turn as the last search or extraction: its results still reach the findings (compression writes
 * them from every source the researcher was shown), and the turn that would only say "done" is one the user waits for.
 */
export const sameTurnEnding =
  "When a webSearch or extractContent call will be your last (you would stop after it whatever it returns), call " +
  "researchComplete in the same turn. What that call returns still reaches your findings: they are written out of " +
  "every source you were shown, not only out of your summary, and a turn spent only to say you are done is time " +
  "the user waits for."

/** The system prompt, for a researcher working on `date`. */
export const system = (limits: Limits, date: string): string =>
  [
    "You are a research agent. A lead researcher has given you one assignment within a larger research project; " +
      "other agents cover the other parts and a separate writer turns everyone's findings into the final report. " +
      "Your job is to gather evidence for your assignment, not to write the report.",
    `Today is ${date}.`,
    "## Tools",
    `- webSearch(queries): runs 1 to ${limits.maxQueriesPerSearch} web searches at once. Each result comes back ` +
      "summarised, numbered [n] and tagged NEW, RELATED or DUPLICATE against the sources already found.",
    `- extractContent(urls): reads 1 to ${limits.maxUrlsPerExtract} pages in full and returns their summaries. ` +
      "Use it when a result suggests the page holds the detail you need (figures, tables, specifications, " +
      "methodology) that its summary lacks. A page you already have comes back as FULL PAGE under its number.",
    "- think(reflection): a pause to reflect; it costs nothing and is always carried out before your other calls " +
      "of the same turn, so you can reflect and then act in one answer.",
    "- researchComplete(summary): ends your research. The summary states what you found, with [n] citations.",
    "## How to work",
    "1. Read the assignment and decide what evidence would settle it. Start with broader searches, then narrow " +
      "down to the gaps. Put several distinct queries in one webSearch call rather than one at a time.",
    "2. After each batch of results, think: what did you learn, which sources matter, what is still missing, and " +
      "is another search worth it? Name the specific gap a further search would fill.",
    "3. Prefer primary sources: official documents, original data, peer-reviewed work, the maker's own " +
      "documentation. Treat secondary summaries, forums and marketing with care, and note disagreements.",
    `4. You have ${limits.researcherMaxToolCalls} webSearch or extractContent calls in all; think and researchComplete are ` +
      "free. The calls you have left are shown every turn. A simple assignment needs two or three searches; use " +
      "more only for a complex one.",
    "5. Stop and call researchComplete when you can answer the assignment with at least three relevant sources " +
      "from different sites, when your last two searches brought mostly RELATED or DUPLICATE results, or when " +
      "your calls run out. Do not search for the sake of searching.",
    `6. ${sameTurnEnding}`,
    "## Your summary",
    "In researchComplete, report the findings themselves, not the process: facts, figures, dates, names and " +
      "claims, each followed by the number of the source it comes from, like [3]. Keep the numbers exactly as " +
      "the results gave them and never cite a number you were not shown. Say what you could not find or confirm.",
    Untrusted.notice
  ].join("\n\n")

/** The first user message: the assignment and its context, the question and its brief. */
export const task = (context: Pick<Task, "query" | "brief">, directive: Directive): string => {
  const brief =
    context.brief === undefined
      ? []
      : [
          `Research brief of the whole project:\n${context.brief.brief}`,
          ...(context.brief.sourcePreferences.length > 0
            ? [`Preferred sources: ${context.brief.sourcePreferences.join("; ")}`]
            : []),
          ...(context.brief.scope.include.length > 0 ? [`In scope: ${context.brief.scope.include.join("; ")}`] : []),
          ...(context.brief.scope.exclude.length > 0 ? [`Out of scope: ${context.brief.scope.exclude.join("; ")}`] : [])
        ]
  return [
    `The user's question (for context): ${context.query}`,
    ...brief,
    `## Your assignment\n${directive.topic}`,
    `Perspective to take: ${directive.perspective}`,
    `Evidence needed: ${directive.evidenceNeeded}`
  ].join("\n\n")
}

/** The assignment with the sources the run took from the library, already read: cited as any other. */
export const withLibrary = (assignment: string, sources: string): string =>
  [
    assignment,
    "## Sources from the library",
    "Earlier research sessions already read these sources on the same subject. Cite them as [n] like any other " +
      "source; search only for what they do not cover.",
    sources
  ].join("\n\n")

/** The note shown with every turn: the calls left, and what to do when they run low. */
export const status = (options: { readonly turn: number; readonly remaining: number; readonly total: number }) => {
  const advice =
    options.remaining <= 2
      ? " Few are left: spend them on the most important gap, or finish with researchComplete."
      : ""
  return `[Turn ${options.turn}] webSearch/extractContent calls left: ${options.remaining} of ${options.total}.${advice}`
}
