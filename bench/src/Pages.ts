/**
 * The scripted scenario of benchmark 3: the search backend returns article-length pages (8,000 to 16,000
 * characters, as news and reports are), the summarization model does what its prompt asks (a summary of about a
 * quarter of the page and five verbatim excerpts), and so does the compression model (every sentence of the
 * researcher's sources kept, with its citation, except those repeated word for word, then a supervisor brief). Every
 * other call is answered by the emulator's simulated world.
 */
import { Emulator } from "@deep-research/emulator"
import * as Effect from "effect/Effect"

/** A small deterministic random source (mulberry32), so generated pages are the same on every run. */
export const seeded = (seed: number) => {
  let state = seed >>> 0
  return (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const hash = (text: string): number => {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619)
  return h >>> 0
}

const slug = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")
    .slice(0, 60) || "topic"

const subjects = ["utility-scale installations", "rooftop systems", "grid connection queues", "module prices"]
const verbs = ["rose", "fell", "held steady", "doubled", "recovered"]
const sources = ["the national regulator", "an industry association", "a university survey", "the statistics office"]

/** A page of about `length` characters: paragraphs of varied sentences with figures, deterministic per URL. */
export const pageText = (url: string, length: number): string => {
  const random = seeded(hash(url))
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)] ?? (items[0] as A)
  const paragraphs: Array<string> = []
  let size = 0
  while (size < length) {
    const sentences: Array<string> = []
    for (let i = 0; i < 4 + Math.floor(random() * 4); i++) {
      const year = 2015 + Math.floor(random() * 10)
      const figure = Math.round(random() * 900) / 10
      sentences.push(
        `In ${year}, ${pick(subjects)} ${pick(verbs)} by ${figure}% according to ${pick(sources)}, ` +
          `a change observers linked to ${pick(subjects)} and to policy ${Math.floor(random() * 90) + 10}.`
      )
    }
    const paragraph = sentences.join(" ")
    paragraphs.push(paragraph)
    size += paragraph.length + 2
  }
  return paragraphs.join("\n\n")
}

const stringField = (value: unknown, key: string): string | undefined => {
  if (typeof value !== "object" || value === null || !(key in value)) return undefined
  const field: unknown = Reflect.get(value, key)
  return typeof field === "string" ? field : undefined
}

const numberField = (value: unknown, key: string): number | undefined => {
  if (typeof value !== "object" || value === null || !(key in value)) return undefined
  const field: unknown = Reflect.get(value, key)
  return typeof field === "number" ? field : undefined
}

/** The text of every message of an OpenAI chat request body. */
export const messagesText = (body: unknown): string => {
  const messages: unknown = typeof body === "object" && body !== null ? Reflect.get(body, "messages") : undefined
  if (!Array.isArray(messages)) return ""
  return messages
    .map((message: unknown) => {
      const content: unknown =
        typeof message === "object" && message !== null ? Reflect.get(message, "content") : undefined
      if (typeof content === "string") return content
      if (Array.isArray(content)) return content.map((part: unknown) => stringField(part, "text") ?? "").join("")
      return ""
    })
    .join("\n")
}

/** Characters inside the untrusted-data blocks of a kind. */
export const untrustedBlocks = (text: string, kind: string): number => {
  let total = 0
  const pattern = new RegExp(`<untrusted_data[^>]*kind="${kind}"[^>]*>([\\s\\S]*?)</untrusted_data>`, "g")
  for (const match of text.matchAll(pattern)) total += (match[1] ?? "").trim().length
  return total
}

const summaryReply = (request: Emulator.RecordedRequest): Emulator.Reply => {
  const prompt = messagesText(request.body)
  const page = /<untrusted_data[^>]*kind="web page"[^>]*>\n?([\s\S]*?)<\/untrusted_data>/.exec(prompt)?.[1] ?? prompt
  const sentences = page.match(/[^.!?]+[.!?]+/g) ?? [page]
  let summary = ""
  for (const sentence of sentences) {
    if (summary.length >= page.length / 4) break
    summary += sentence
  }
  const excerpts = sentences
    .filter((s) => /\d/.test(s))
    .slice(0, 5)
    .map((s) => s.trim())
  return Emulator.openaiJson(
    { summary: summary.trim(), excerpts },
    { usage: { input: Math.ceil(JSON.stringify(request.body).length / 4) } }
  )
}

/**
 * What the compression prompt asks: the findings, every sentence of every source kept with the source's citation
 * number, except sentences repeated word for word (a source's excerpts quote its summary); then the supervisor brief.
 */
const compressionReply = (request: Emulator.RecordedRequest): Emulator.Reply => {
  const prompt = messagesText(request.body)
  const emitted = new Set<string>()
  const paragraphs: Array<string> = []
  const cited: Array<string> = []
  const pattern = /<untrusted_data[^>]*kind="source"[^>]*label="\[(\d+)\]"[^>]*>\n?([\s\S]*?)<\/untrusted_data>/g
  for (const match of prompt.matchAll(pattern)) {
    const label = `[${match[1] ?? "1"}]`
    // Line by line (the excerpts are a list of quotations), sentence by sentence, without list marks and quotes.
    const kept = (match[2] ?? "")
      .split("\n")
      .flatMap((line) => line.match(/[^.!?]+[.!?]+/g) ?? [])
      .map((sentence) =>
        sentence
          .trim()
          .replace(/^[-*"\s]+/, "")
          .replace(/"$/, "")
      )
      .filter((sentence) => {
        if (sentence.length === 0 || emitted.has(sentence)) return false
        emitted.add(sentence)
        return true
      })
    if (kept.length === 0) continue
    cited.push(label)
    paragraphs.push(`${kept.join(" ")} ${label}`)
  }
  const brief = [
    "## Supervisor brief",
    `Covered: ${cited.length} sources on the assignment.`,
    `Key findings: installations and prices changed year on year ${cited.slice(0, 3).join("")}.`,
    "Confidence: medium, several sources of different kinds that mostly agree.",
    "Gaps: no figures for the most recent quarter."
  ].join("\n")
  const text = `## Findings\n\n${paragraphs.join("\n\n")}\n\n${brief}`
  return Emulator.openaiText(text, {
    usage: { input: Math.ceil(JSON.stringify(request.body).length / 4), output: Math.ceil(text.length / 4) }
  })
}

/**
 * Installs the scenario over a simulated emulator; `served` collects the raw characters of every distinct page the
 * search backend returned.
 */
export const install = (
  handle: Emulator.Handle,
  simulator: (request: Emulator.RecordedRequest) => Emulator.Reply | undefined | Promise<Emulator.Reply | undefined>,
  served: Map<string, number>
): Effect.Effect<void> =>
  Effect.gen(function* () {
    let call = 0
    yield* handle.respond("tavily.search", (request) => {
      // Each search call gets pages of its own: the simulated researchers all search with the question's words, and
      // real researchers, searching for their own topics, mostly find different pages.
      call++
      const query = stringField(request.body, "query") ?? "topic"
      const count = Math.min(numberField(request.body, "max_results") ?? 3, 3)
      const results = Array.from({ length: count }, (_, i) => {
        // Generated from the path alone, so the pages are the same whatever port the emulator listens on.
        const page = `/web/articles/${slug(query)}-c${call}-${i + 1}`
        const url = `${handle.url}${page}`
        const text = pageText(page, 8_000 + (hash(page) % 8_000))
        served.set(url, text.length)
        return {
          url,
          title: `${query.slice(0, 80)} (search ${call}, result ${i + 1})`,
          content: text.slice(0, 300),
          rawContent: text
        }
      })
      return Emulator.tavilyResults(results, { query })
    })
    yield* handle.setFallback((request) => {
      if (request.endpoint !== "openai.chat") return simulator(request)
      switch (request.headers["x-bench-role"]) {
        case "summarization":
          return summaryReply(request)
        case "compression":
          return compressionReply(request)
        default:
          return simulator(request)
      }
    })
  })
