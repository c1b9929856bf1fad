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
}

const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

const completionTokens = (text: string): number => {
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== "object" || parsed === null) return 0
    const usage: unknown = Reflect.get(parsed, "usage")
    if (typeof usage !== "object" || usage === null) return 0
    const tokens: unknown = Reflect.get(usage, "completion_tokens")
    return typeof tokens === "number" ? tokens : 0
  } catch {
    return 0
  }
}

/** `fetch` to the emulator, each answer held back by `latency` for the tokens it carries. */
export const openaiFetch =
  (latency: Latency): typeof fetch =>
  async (input, init) => {
    const began = performance.now()
    const response = await fetch(input, init)
    const text = await response.text()
    const generating = latency.firstTokenMillis + latency.perTokenMillis * completionTokens(text)
    await sleep(generating - (performance.now() - began))
    return new Response(text, { status: response.status, headers: response.headers })
  }
