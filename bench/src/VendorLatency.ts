/**
 * A model vendor's latency as a user meets it: a wait for the first token, then a time for each token of the answer,
 * so a long answer takes longer than a short one (a fixed time a call hides that). A `fetch` for the OpenAI SDK that
 * asks the emulator (set to answer at once) and hands the answer over only after the time its `usage.completion_tokens`
 * would have taken to generate.
 */

/** The wait before the first token and the time of each further token, in milliseconds. */
export interface Latency {
  readonly firstTokenMillis: number
  readonly perTokenMillis: number
  /** The time each token of the prompt adds before the first token (a long prompt is read first). */
  readonly perInputTokenMillis?: number | undefined
}

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

const usageTokens = (text: string, field: "completion_tokens" | "prompt_tokens"): number => {
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== "object" || parsed === null) return 0
    const usage: unknown = Reflect.get(parsed, "usage")
    if (typeof usage !== "object" || usage === null) return 0
    const tokens: unknown = Reflect.get(usage, field)
    return typeof tokens === "number" ? tokens : 0
  } catch {
    return 0
  }
}

/** The JSON of one server-sent event's `data:` line, if it has one. */
const eventData = (event: string): unknown => {
  const line = event.split("\n").find((l) => l.startsWith("data: "))
  if (line === undefined || line === "data: [DONE]") return undefined
  try {
    return JSON.parse(line.slice("data: ".length))
  } catch {
    return undefined
  }
}

/** Characters of generated text (content and tool-call arguments) an OpenAI chunk carries. */
const generatedChars = (chunk: unknown): number => {
  if (typeof chunk !== "object" || chunk === null) return 0
  const choices: unknown = Reflect.get(chunk, "choices")
  if (!Array.isArray(choices)) return 0
  let n = 0
  for (const choice of choices) {
    const delta: unknown = typeof choice === "object" && choice !== null ? Reflect.get(choice, "delta") : undefined
    if (typeof delta !== "object" || delta === null) continue
    const content: unknown = Reflect.get(delta, "content")
    if (typeof content === "string") n += content.length
    const calls: unknown = Reflect.get(delta, "tool_calls")
    if (Array.isArray(calls)) n += JSON.stringify(calls).length
  }
  return n
}

/**
 * A streamed answer (server-sent events) paced as a vendor writes it: the first token after the wait, each later chunk
 * when the tokens before it would have been generated (the answer's output tokens spread over its characters).
 */
const paced = (text: string, began: number, latency: Latency, headers: Headers, status: number): Response => {
  const events = text
    .split("\n\n")
    .filter((event) => event.trim() !== "")
    .map((event) => `${event}\n\n`)
  const chunks = events.map(eventData)
  const usage: ReadonlyArray<unknown> = chunks.map((chunk) =>
    typeof chunk === "object" && chunk !== null ? Reflect.get(chunk, "usage") : null
  )
  const last = [...usage].reverse().find((u) => typeof u === "object" && u !== null)
  const tokens = (field: string): number => {
    const value: unknown = typeof last === "object" && last !== null ? Reflect.get(last, field) : undefined
    return typeof value === "number" ? value : 0
  }
  const chars = chunks.map(generatedChars)
  const total = Math.max(
    1,
    chars.reduce((a, b) => a + b, 0)
  )
  const first = latency.firstTokenMillis + (latency.perInputTokenMillis ?? 0) * tokens("prompt_tokens")
  const encoder = new TextEncoder()
  let written = 0
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const [i, event] of events.entries()) {
        written += chars[i] ?? 0
        const at = first + latency.perTokenMillis * tokens("completion_tokens") * (written / total)
        await sleep(at - (performance.now() - began))
        controller.enqueue(encoder.encode(event))
      }
      controller.close()
    }
  })
  return new Response(body, { status, headers })
}

/** `fetch` to the emulator, each answer held back by `latency` for the tokens it carries; a streamed one paced. */
export const openaiFetch =
  (latency: Latency): typeof fetch =>
  async (input, init) => {
    const began = performance.now()
    const response = await fetch(input, init)
    const text = await response.text()
    if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
      return paced(text, began, latency, response.headers, response.status)
    }
    const generating =
      latency.firstTokenMillis +
      (latency.perInputTokenMillis ?? 0) * usageTokens(text, "prompt_tokens") +
      latency.perTokenMillis * usageTokens(text, "completion_tokens")
    await sleep(generating - (performance.now() - began))
    return new Response(text, { status: response.status, headers: response.headers })
  }
