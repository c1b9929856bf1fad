/**
 * Making an input smaller when it does not fit a model's context window. Two strategies:
 * - sectioned prompts (instructions, question, brief, source blocks, findings): shorten the longest source and
 *   findings sections first, then drop the lowest-quality sources, then cut characters; instructions, the question
 *   and the brief are never touched;
 * - conversations (tool-calling histories): drop the oldest assistant turns with their tool results, keeping the
 *   system prompt, the task, the latest turn and the last user message (the one asking for the output).
 * Sizes are estimated with `Tokens`.
 */
import * as LanguageModel from "./LanguageModel.js"
import * as Tokens from "./Tokens.js"

// =============================================================================
// Sections
// =============================================================================

/** One block of a sectioned prompt. */
export interface Section {
  readonly name: string
  readonly kind: "instruction" | "question" | "brief" | "source" | "findings"
  readonly content: string
  /** Higher is better; sources without one are dropped before sources with one. */
  readonly quality?: number | undefined
}

/** Appended where text was cut, so the model knows the text goes on. */
export const truncationMarker = "\n[... truncated to fit the context window]"

/** Sections that are never shortened or dropped. */
export const isProtected = (section: Section): boolean =>
  section.kind === "instruction" || section.kind === "question" || section.kind === "brief"

/** Estimated tokens of the sections' contents. */
export const sectionTokens = (sections: ReadonlyArray<Section>): number =>
  sections.reduce((sum, section) => sum + Tokens.estimateTokens(section.content), 0)

/**
 * Cuts `text` to at most `maxCharacters` (the marker included), at a paragraph or sentence end when there is one in
 * the last fifth of what is kept. Returns "" when not even the marker fits.
 */
export const cutText = (text: string, maxCharacters: number): string => {
  if (text.length <= maxCharacters) return text
  const room = Math.floor(maxCharacters) - truncationMarker.length
  if (room <= 0) return ""
  const kept = text.slice(0, room)
  const earliest = Math.floor(room * 0.8)
  const paragraph = kept.lastIndexOf("\n\n")
  const sentence = Math.max(
    kept.lastIndexOf(". "),
    kept.lastIndexOf(".\n"),
    kept.lastIndexOf("! "),
    kept.lastIndexOf("? "),
    kept.lastIndexOf("\n")
  )
  const cut = paragraph >= earliest ? paragraph : sentence >= earliest ? sentence + 1 : room
  return kept.slice(0, cut).trimEnd() + truncationMarker
}

/** Estimated tokens a character of each text: a text cut short keeps the rate of its script. */
const densities = (texts: ReadonlyArray<string>): ReadonlyArray<number> =>
  texts.map((text) => (text.length === 0 ? 0 : Tokens.estimateTokens(text) / text.length))

/**
 * The highest cap on the lengths under which the total fits (no length going below its floor), or undefined when even
 * every length at its floor is too much. Capping the longest first is what "shorten the longest sections first" means.
 * `density` gives each text's estimated tokens a character.
 */
const waterLevel = (
  lengths: ReadonlyArray<number>,
  floors: ReadonlyArray<number>,
  density: ReadonlyArray<number>,
  fixedTokens: number,
  targetTokens: number
): number | undefined => {
  const total = (level: number) =>
    lengths.reduce(
      (sum, length, i) => sum + Math.ceil(cappedLength(length, floors[i] ?? 0, level) * (density[i] ?? 1)),
      fixedTokens
    )
  const longest = lengths.reduce((max, length) => Math.max(max, length), 0)
  if (total(0) > targetTokens) return undefined
  let low = 0
  let high = longest
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (total(middle) <= targetTokens) low = middle
    else high = middle - 1
  }
  return low
}

const cappedLength = (length: number, floor: number, level: number): number =>
  length <= level ? length : Math.max(floor, level)

interface Fitted {
  readonly sections: ReadonlyArray<Section>
  readonly fits: boolean
}

/** Cuts the longest shrinkable sections down, none below `floorRatio` of its length, until the total fits. */
const shorten = (sections: ReadonlyArray<Section>, targetTokens: number, floorRatio: number): Fitted => {
  const fixedTokens = sectionTokens(sections.filter(isProtected))
  const shrinkable = sections.filter((section) => !isProtected(section))
  const lengths = shrinkable.map((section) => section.content.length)
  const floors = lengths.map((length) => Math.ceil(length * floorRatio))
  const level = waterLevel(
    lengths,
    floors,
    densities(shrinkable.map((section) => section.content)),
    fixedTokens,
    targetTokens
  )
  const cut = (section: Section): Section => {
    if (isProtected(section)) return section
    const limit = cappedLength(section.content.length, Math.ceil(section.content.length * floorRatio), level ?? 0)
    return limit >= section.content.length ? section : { ...section, content: cutText(section.content, limit) }
  }
  // A section cut below the marker's length has nothing left worth sending.
  const result = sections
    .map((section) => ({ before: section, after: cut(section) }))
    .filter(({ after, before }) => after.content.length > 0 || before.content.length === 0)
    .map(({ after }) => after)
  return { sections: result, fits: level !== undefined }
}

/** Sources in the order they are dropped: lowest quality first (unrated before rated), longer first on ties. */
const dropOrder = (sections: ReadonlyArray<Section>): ReadonlyArray<Section> =>
  sections
    .filter((section) => section.kind === "source")
    .slice()
    .sort((a, b) => {
      const qa = a.quality ?? Number.NEGATIVE_INFINITY
      const qb = b.quality ?? Number.NEGATIVE_INFINITY
      return qa !== qb ? qa - qb : b.content.length - a.content.length
    })

/**
 * Shrinks sectioned content to at most `targetTokens` (estimated over the sections' contents), in three steps:
 * 1. shorten the longest source and findings sections first, none below half its length;
 * 2. drop sources, lowest quality first, shortening what is left as in 1 (the last content section is never dropped);
 * 3. cut characters from what is left, longest first.
 * Instructions, the question and the brief are never changed; when they alone exceed the target, only they remain.
 * Sections keep their order.
 */
export const truncateSections = (sections: ReadonlyArray<Section>, targetTokens: number): ReadonlyArray<Section> => {
  if (sectionTokens(sections) <= targetTokens) return sections
  const halved = shorten(sections, targetTokens, 0.5)
  if (halved.fits) return halved.sections
  const order = dropOrder(sections)
  const contentSections = sections.filter((section) => !isProtected(section)).length
  const maxDrops = Math.min(order.length, contentSections - 1)
  const withoutWorst = (drops: number): ReadonlyArray<Section> => {
    const dropped = new Set(order.slice(0, drops))
    return sections.filter((section) => !dropped.has(section))
  }
  // Dropping more never makes the rest larger, so the fewest drops that fit can be found by bisection.
  let low = 1
  let high = maxDrops
  while (low < high) {
    const middle = Math.floor((low + high) / 2)
    if (shorten(withoutWorst(middle), targetTokens, 0.5).fits) high = middle
    else low = middle + 1
  }
  if (maxDrops >= 1) {
    const attempt = shorten(withoutWorst(low), targetTokens, 0.5)
    if (attempt.fits) return attempt.sections
  }
  const remaining = withoutWorst(Math.max(0, maxDrops))
  return shorten(remaining, targetTokens, 0).sections
}

// =============================================================================
// Conversations
// =============================================================================

/**
 * Shrinks a conversation to at most `targetTokens` (estimated over the whole request). Drops the oldest model turns
 * (an assistant message with the tool results and notes that follow it) first. Always kept: the system prompt, the
 * messages up to the first user message (the task), the latest turn and the last user message (the one asking for
 * the output). When that is still too much, tool results are cut, longest first. User messages are never cut.
 */
export const truncateConversation = (
  request: LanguageModel.GenerateRequest,
  targetTokens: number
): LanguageModel.GenerateRequest => {
  if (Tokens.estimateRequestTokens(request) <= targetTokens) return request
  const messages = request.messages
  const firstUser = messages.findIndex((message) => message._tag === "user")
  const lastUser = findLastIndex(messages, (message) => message._tag === "user")
  const turnStarts: Array<number> = []
  messages.forEach((message, index) => {
    if (index > firstUser && message._tag === "assistant") turnStarts.push(index)
  })
  // Every turn but the latest may go, oldest first.
  const droppableTurns = turnStarts.slice(0, -1).map((start, i) => {
    const end = turnStarts[i + 1] ?? messages.length
    return range(start, end).filter((index) => index !== lastUser)
  })
  const removed = new Set<number>()
  const withRemoved = (): LanguageModel.GenerateRequest => ({
    ...request,
    messages: messages.filter((_, index) => !removed.has(index))
  })
  let current = withRemoved()
  for (const turn of droppableTurns) {
    if (Tokens.estimateRequestTokens(current) <= targetTokens) return current
    turn.forEach((index) => removed.add(index))
    current = withRemoved()
  }
  if (Tokens.estimateRequestTokens(current) <= targetTokens) return current
  return cutToolResults(current, targetTokens)
}

/** Cuts tool results, longest first, until the request fits (or they are all down to nothing but a marker). */
const cutToolResults = (
  request: LanguageModel.GenerateRequest,
  targetTokens: number
): LanguageModel.GenerateRequest => {
  const results = request.messages.filter(
    (message): message is LanguageModel.ToolResultMessage => message._tag === "tool"
  )
  // One token of slack per result covers the rounding of name and content estimated apart.
  const fixedTokens =
    Tokens.estimateRequestTokens({
      ...request,
      messages: request.messages.map((message) =>
        message._tag === "tool"
          ? new LanguageModel.ToolResultMessage({
              toolCallId: message.toolCallId,
              name: message.name,
              content: "",
              isError: message.isError
            })
          : message
      )
    }) + results.length
  const lengths = results.map((message) => message.content.length)
  const level = waterLevel(
    lengths,
    lengths.map(() => 0),
    densities(results.map((message) => message.content)),
    fixedTokens,
    targetTokens
  )
  const limit = level ?? 0
  return {
    ...request,
    messages: request.messages.map((message) =>
      message._tag === "tool" && message.content.length > limit
        ? new LanguageModel.ToolResultMessage({
            toolCallId: message.toolCallId,
            name: message.name,
            // A tool result cannot be empty for some vendors, so the marker always stays.
            content: cutText(message.content, limit) || truncationMarker.trim(),
            isError: message.isError
          })
        : message
    )
  }
}

const findLastIndex = <A>(items: ReadonlyArray<A>, predicate: (item: A) => boolean): number => {
  for (let index = items.length - 1; index >= 0; index--) {
    const item = items[index]
    if (item !== undefined && predicate(item)) return index
  }
  return -1
}

const range = (start: number, end: number): ReadonlyArray<number> =>
  Array.from({ length: Math.max(0, end - start) }, (_, i) => start + i)
