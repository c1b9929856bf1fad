/**
 * Structured answers over any language model: native structured output where the model has it, otherwise
 * instructions plus parsing. Either way the answer is freed of `<think>` blocks, the JSON is taken from a fence or the
 * outermost balanced braces, decoded with the Schema, and on failure the model is asked again with the error shown.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { ModelMalformedOutput, type ProviderError } from "./Errors.js"
import * as LanguageModel from "./LanguageModel.js"
import * as Tool from "./Tool.js"

/** Removes reasoning blocks (`<think>…</think>`, `<thinking>…</thinking>`), including an unclosed leading one. */
export const stripThinking = (text: string): string =>
  text
    .replace(/<(think|thinking|reasoning)>[\s\S]*?<\/\1>/gi, "")
    .replace(/^\s*<(think|thinking|reasoning)>[\s\S]*$/i, "")
    .trim()

/** The balanced `{…}` or `[…]` that opens at `start`, honouring strings and escapes. */
const balancedAt = (text: string, start: number): string | undefined => {
  const stack: Array<string> = []
  let inString = false
  let escaped = false
  for (let i = start; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (escaped) escaped = false
      else if (c === "\\") escaped = true
      else if (c === '"') inString = false
      continue
    }
    if (c === '"') inString = true
    else if (c === "{") stack.push("}")
    else if (c === "[") stack.push("]")
    else if (c === "}" || c === "]") {
      if (stack.pop() !== c) return undefined
      if (stack.length === 0) return text.slice(start, i + 1)
    }
  }
  return undefined
}

const parseJson = (text: string): Either.Either<unknown, string> => {
  try {
    return Either.right(JSON.parse(text))
  } catch (error) {
    return Either.left(error instanceof Error ? error.message : String(error))
  }
}

const parses = (text: string): boolean => Either.isRight(parseJson(text))

/**
 * The balanced spans of a text that parse as JSON, outermost ones only. Prose may hold brackets of its own ("see
 * [1]", "{sic}"), so every opening bracket outside a span already found is tried.
 */
const jsonSpans = (text: string): ReadonlyArray<string> => {
  const spans: Array<string> = []
  let from = 0
  while (from < text.length) {
    const offset = text.slice(from).search(/[{[]/)
    if (offset < 0) break
    const start = from + offset
    const span = balancedAt(text, start)
    if (span !== undefined && parses(span)) {
      spans.push(span)
      from = start + span.length
    } else {
      from = start + 1
    }
  }
  return spans
}

const byLengthDescending = (a: string, b: string) => b.length - a.length

/**
 * The texts of a model's answer that may be its JSON, best first: the JSON of each ```json fence, then the balanced
 * spans outside fences that parse, longest first. Thinking blocks are removed first.
 */
export const jsonCandidates = (text: string): ReadonlyArray<string> => {
  const cleaned = stripThinking(text)
  const fence = /```(?:json|JSON)?\s*\n?([\s\S]*?)```/g
  const fenced = [...cleaned.matchAll(fence)].flatMap((match) => {
    const body = match[1]?.trim() ?? ""
    const best = [...jsonSpans(body)].sort(byLengthDescending)[0]
    return best !== undefined ? [best] : parses(body) ? [body] : []
  })
  const loose = [...jsonSpans(cleaned)].sort(byLengthDescending)
  return [...new Set([...fenced, ...loose])]
}

/**
 * The JSON text inside a model's answer: the content of a ```json fence if there is one that parses, else the
 * longest balanced braces that parse, else the first balanced braces, else the whole text.
 */
export const extractJson = (text: string): string => {
  const best = jsonCandidates(text)[0]
  if (best !== undefined) return best
  const cleaned = stripThinking(text)
  const start = cleaned.search(/[{[]/)
  return (start < 0 ? undefined : balancedAt(cleaned, start)) ?? cleaned
}

const decodeWith = <A, I>(schema: Schema.Schema<A, I>, value: unknown): Either.Either<A, string> =>
  Either.mapLeft(
    Schema.decodeUnknownEither(schema, { onExcessProperty: "ignore" })(Tool.unwrapAnswer(schema, value)),
    (error) => `The JSON does not match the schema:\n${ParseResult.TreeFormatter.formatErrorSync(error)}`
  )

/**
 * Parses and decodes a model's answer: the first candidate that decodes wins. The left side, a message fit to show
 * the model, is about the best candidate.
 */
export const parseAnswer = <A, I>(schema: Schema.Schema<A, I>, text: string): Either.Either<A, string> => {
  for (const candidate of jsonCandidates(text)) {
    const decoded = Either.flatMap(parseJson(candidate), (value) => decodeWith(schema, value))
    if (Either.isRight(decoded)) return decoded
  }
  const json = extractJson(text)
  return Either.flatMap(
    Either.mapLeft(parseJson(json), (error) => `The answer is not valid JSON (${error}).`),
    (value) => decodeWith(schema, value)
  )
}

/**
 * A system prompt asking for JSON of a schema, for a model without native structured output: the schema is stated in
 * the prompt and the answer parsed (`parseAnswer`).
 */
export const promptedSystem = (system: string | undefined, jsonSchema: object): string =>
  [
    system ?? "",
    `Answer with a single JSON object and nothing else, matching this JSON schema:\n${JSON.stringify(jsonSchema)}`
  ]
    .filter((part) => part !== "")
    .join("\n\n")

/** Options of `generateObject`. */
export interface GenerateObjectOptions {
  /** A name for the object (the JSON schema's name, or the forced tool's). */
  readonly name?: string | undefined
  /** Asks after a failed decode; the design's default is 3. */
  readonly retries?: number | undefined
}

/** A decoded object and the completion it came from (the last one, when it took several). */
export interface GeneratedObject<A> {
  readonly value: A
  readonly completion: LanguageModel.Completion
  readonly attempts: number
}

/**
 * Asks a model for an object of the Schema's shape. Fails with `ModelMalformedOutput` when the answer still does not
 * decode after the retries, or with the provider's error.
 */
export const generateObject = <A, I>(
  model: LanguageModel.Service,
  schema: Schema.Schema<A, I>,
  request: LanguageModel.GenerateRequest,
  options?: GenerateObjectOptions
): Effect.Effect<GeneratedObject<A>, ProviderError | ModelMalformedOutput> => {
  const name = options?.name ?? "answer"
  const retries = options?.retries ?? 3
  const jsonSchema = Tool.jsonSchemaOf(schema)
  const native = model.capabilities.structuredOutput
  const system = native ? request.system : promptedSystem(request.system, jsonSchema)
  const base: LanguageModel.GenerateRequest = {
    ...request,
    system,
    ...(native ? { responseFormat: { name, schema: jsonSchema } } : {})
  }
  const loop = (
    messages: ReadonlyArray<LanguageModel.Message>,
    attempt: number
  ): Effect.Effect<GeneratedObject<A>, ProviderError | ModelMalformedOutput> =>
    Effect.flatMap(model.generate({ ...base, messages }), (completion) => {
      const parsed = parseAnswer(schema, completion.text)
      if (Either.isRight(parsed)) return Effect.succeed({ value: parsed.right, completion, attempts: attempt })
      if (attempt > retries) {
        return Effect.fail(new ModelMalformedOutput({ reason: parsed.left, raw: completion.text.slice(0, 4_000) }))
      }
      return loop(
        [
          ...messages,
          LanguageModel.assistant(completion.text),
          LanguageModel.user(
            `Your answer could not be used. ${parsed.left}\nAnswer again with only the corrected JSON object.`
          )
        ],
        attempt + 1
      )
    })
  return loop(request.messages, 1)
}
