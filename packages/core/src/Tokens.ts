/**
 * Token arithmetic without a tokenizer: a script-aware estimate (words of Latin text, identifiers of code, digits in
 * groups, punctuation, CJK and Hangul per character, each at its own rate, fitted to OpenAI's o200k encoding), and
 * context windows from a table kept as JSON (longest name match wins, unknown models get 128k), so new models need no
 * code change. A model whose vendor publishes its tokenizer counts exactly instead (`LanguageModel.Service.countTokens`,
 * `countRequestTokens`); core carries no tokenizer of its own.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import defaultTableJson from "./data/context-windows.json" with { type: "json" }
import { longestMatch } from "./internal/text/longestMatch.js"
import type { GenerateRequest, Message, Service as LanguageModelService } from "./LanguageModel.js"

// =============================================================================
// Schemas
// =============================================================================

/** The context window of the models whose name contains `match`. */
export class ContextWindow extends Schema.Class<ContextWindow>("@deep-research/core/ContextWindow")({
  match: Schema.String.pipe(Schema.minLength(1)),
  tokens: Schema.Int.pipe(Schema.positive())
}) {}

/** A table of context windows. */
export class ContextWindows extends Schema.Class<ContextWindows>("@deep-research/core/ContextWindows")({
  /** The window assumed for models that match no entry. */
  defaultTokens: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 128_000 }),
  windows: Schema.Array(ContextWindow)
}) {}

/** The table shipped with the library (`data/context-windows.json`). */
export const defaultTable: ContextWindows = Schema.decodeUnknownSync(ContextWindows)(defaultTableJson)

// =============================================================================
// Service
// =============================================================================

/** The context window table in use; without one in context, the shipped table applies. */
export class ContextWindowTable extends Context.Tag("@deep-research/core/Tokens/ContextWindowTable")<
  ContextWindowTable,
  ContextWindows
>() {}

/** Uses the given table instead of the shipped one. */
export const layer = (table: ContextWindows): Layer.Layer<ContextWindowTable> =>
  Layer.succeed(ContextWindowTable, table)

/** Uses the table shipped with the library. */
export const layerDefault: Layer.Layer<ContextWindowTable> = layer(defaultTable)

/** Decodes a table from JSON text (e.g. a user's own file). */
export const decodeTable = Schema.decodeUnknown(Schema.parseJson(ContextWindows))

// =============================================================================
// Estimates
// =============================================================================

/**
 * Characters of English text a token, on average under o200k (4.3 to 4.9 over this project's prose and code): for
 * rough conversions only, where no text is at hand to estimate (`charactersFor` without a sample).
 */
export const charactersPerToken = 4

// The estimate's rates, fitted by least squares on relative error to o200k counts of 440 texts: this repository's
// TypeScript, Markdown and JSON, the vendor cassettes, research questions in English and Chinese, and TypeScript's
// messages in 13 languages. Over them, 4 in 440 are off by more than 15% (Russian over, Czech and traditional Chinese
// under); English and code within 13%, simplified Chinese and Japanese counted 10 to 15% high, which errs on the safe
// side for budgets and context windows. `Tokens.test.ts` holds English, Chinese and code against the tokenizer.
const rate = {
  /** A run of ASCII letters (a camelCase identifier is one run per capital): most English words are one token. */
  word: 1.05,
  /** Each letter of a run beyond the sixth: long words and identifiers split. */
  longWordLetter: 0.16,
  /** Each letter of a word with letters beyond ASCII (accented Latin, Cyrillic, Greek, Arabic, ...). */
  otherLetter: 0.31,
  /** A group of up to three digits: o200k splits numbers so. */
  digitGroup: 2,
  /** ASCII punctuation and symbols, which often merge with a neighbour. */
  punctuation: 0.26,
  /** A line break (or a run of them) and the indentation after it. */
  lineBreak: 1.36,
  /** A Han character, kana, or full-width form. */
  cjk: 0.79,
  /** A Hangul syllable or letter. */
  hangul: 0.71,
  /** Other symbols, emoji halves and everything else. */
  other: 1.55
} as const

const isCjk = (code: number): boolean =>
  (code >= 0x2e80 && code <= 0x9fff) || (code >= 0xf900 && code <= 0xfaff) || (code >= 0xff00 && code <= 0xffef)

const isHangul = (code: number): boolean =>
  (code >= 0xac00 && code <= 0xd7af) || (code >= 0x1100 && code <= 0x11ff) || (code >= 0x3130 && code <= 0x318f)

/** Any letter beyond ASCII that joins a word: from Latin-1 up to the CJK blocks, symbols and punctuation aside. */
const isOtherLetter = (code: number): boolean => code >= 0xc0 && code < 0x2000 && code !== 0xd7 && code !== 0xf7

/**
 * Estimated tokens of a text, by script: one pass over its characters, rounded up. About as fast as reading the text
 * (see BENCHMARKS.md, "Budgets and token counts").
 */
export const estimateTokens = (text: string): number => {
  let tokens = 0
  let word = 0
  let wordBeyondAscii = false
  let digits = 0
  let previousLower = false
  let previousBreak = false
  const endWord = () => {
    if (word > 0) {
      tokens += wordBeyondAscii ? word * rate.otherLetter : rate.word + Math.max(0, word - 6) * rate.longWordLetter
    }
    word = 0
    wordBeyondAscii = false
  }
  const endDigits = () => {
    if (digits > 0) tokens += Math.ceil(digits / 3) * rate.digitGroup
    digits = 0
  }
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    const lower = code >= 97 && code <= 122
    const upper = code >= 65 && code <= 90
    if (lower || upper || isOtherLetter(code)) {
      if (digits > 0) endDigits()
      if (upper && previousLower) endWord()
      word++
      if (!lower && !upper) wordBeyondAscii = true
      previousLower = lower
      previousBreak = false
      continue
    }
    if (word > 0) endWord()
    previousLower = false
    if (code >= 48 && code <= 57) {
      digits++
      previousBreak = false
      continue
    }
    if (digits > 0) endDigits()
    if (code === 10 || code === 13) {
      if (!previousBreak) tokens += rate.lineBreak
      previousBreak = true
      continue
    }
    if (code === 32 || code === 9) continue
    previousBreak = false
    if (code < 128) tokens += rate.punctuation
    else if (isCjk(code)) tokens += rate.cjk
    else if (isHangul(code)) tokens += rate.hangul
    else tokens += rate.other
  }
  endWord()
  endDigits()
  return Math.ceil(tokens)
}

/**
 * The most characters that fit in `tokens`: of text like `sample` (its own characters a token) when given, else at
 * `charactersPerToken`.
 */
export const charactersFor = (tokens: number, sample?: string | undefined): number => {
  const whole = Math.max(0, Math.floor(tokens))
  if (sample === undefined || sample.length === 0) return whole * charactersPerToken
  return Math.floor((whole * sample.length) / Math.max(1, estimateTokens(sample)))
}

/** Tokens a vendor adds around each message of a conversation (its role, its delimiters). */
export const messageOverheadTokens = 4

/** The text of one message as the model reads it (tool call arguments included). */
export const messageText = (message: Message): string => {
  switch (message._tag) {
    case "user":
      return message.content
    case "tool":
      return message.name + message.content
    case "assistant":
      return (
        message.content +
        message.toolCalls
          .map(
            (call) => call.name + (typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments))
          )
          .join("")
      )
  }
}

/** Counts the tokens of a text: the estimate, or a vendor's tokenizer. */
export type TextCounter = (text: string) => number

/**
 * Input tokens of a request under `count`: system prompt, messages (each with the vendor's overhead around it), tool
 * calls, tool definitions and response format, each schema counted once as JSON (schemas are made once and sent at
 * every call, so the count of each is kept, by schema).
 */
export const requestTokensWith = (count: TextCounter): ((request: GenerateRequest) => number) => {
  const schemas = new WeakMap<object, number>()
  const schemaTokens = (schema: object): number => {
    const known = schemas.get(schema)
    if (known !== undefined) return known
    const tokens = count(JSON.stringify(schema))
    schemas.set(schema, tokens)
    return tokens
  }
  const messageTokens = (message: Message): number => {
    switch (message._tag) {
      case "user":
        return messageOverheadTokens + count(message.content)
      case "tool":
        return messageOverheadTokens + count(message.name) + count(message.content)
      case "assistant": {
        let tokens = messageOverheadTokens + count(message.content)
        for (const call of message.toolCalls) {
          tokens +=
            count(call.name) +
            count(typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments))
        }
        return tokens
      }
    }
  }
  return (request) => {
    let tokens = request.system === undefined ? 0 : messageOverheadTokens + count(request.system)
    for (const message of request.messages) tokens += messageTokens(message)
    for (const tool of request.tools ?? []) {
      tokens += count(tool.name) + count(tool.description) + schemaTokens(tool.parameters)
    }
    const format = request.responseFormat
    if (format !== undefined) tokens += count(format.name) + schemaTokens(format.schema)
    return tokens
  }
}

/** Estimated input tokens of a request (`requestTokensWith` over `estimateTokens`), as run at every model call. */
export const estimateRequestTokens: (request: GenerateRequest) => number = requestTokensWith(estimateTokens)

/** Estimated tokens of one message, with the vendor's overhead around it. */
export const estimateMessageTokens = (message: Message): number => estimateRequestTokens({ messages: [message] })

/**
 * Input tokens of a request to `model`: counted by the vendor's tokenizer where the model has one
 * (`countTokens`), else estimated.
 */
export const countRequestTokens = (
  model: Pick<LanguageModelService, "countTokens">,
  request: GenerateRequest
): Effect.Effect<number> =>
  model.countTokens === undefined ? Effect.succeed(estimateRequestTokens(request)) : model.countTokens(request)

// =============================================================================
// Context windows
// =============================================================================

/** The context window of a model: the longest matching entry of `table`, else the table's default (128k). */
export const contextWindowOf = (model: string, table: ContextWindows = defaultTable): number =>
  longestMatch(table.windows, model)?.tokens ?? table.defaultTokens

/** The context window of a model under the table in context, or the shipped one. */
export const contextWindow = (model: string): Effect.Effect<number> =>
  Effect.map(Effect.serviceOption(ContextWindowTable), (table) =>
    contextWindowOf(
      model,
      Option.getOrElse(table, () => defaultTable)
    )
  )

/** Tokens left for the input once `reservedOutputTokens` are set aside for the answer (never below 0). */
export const inputBudget = (contextWindowTokens: number, reservedOutputTokens: number): number =>
  Math.max(0, contextWindowTokens - reservedOutputTokens)
