/**
 * Shared set-up of the research unit tests: a directive, pages of a static web, and a runner that provides the
 * scripted router, the static web, the summarizer over the summarization role and a progress stream, returning the
 * unit's output, the model calls and the events.
 */
import { Effect, Layer, Queue } from "effect"
import * as LanguageModel from "../../src/LanguageModel.js"
import * as ResearchUnit from "../../src/phases/ResearchUnit.js"
import { type Brief, Directive, IssuedDirective } from "../../src/Research.js"
import * as ResearchConfig from "../../src/ResearchConfig.js"
import * as ResearchEvents from "../../src/ResearchEvents.js"
import * as SearchProvider from "../../src/SearchProvider.js"
import type { Source } from "../../src/Source.js"
import * as Summarizer from "../../src/Summarizer.js"
import * as Task from "../../src/Task.js"
import { ScriptedModel, StaticWeb } from "../../src/testing/index.js"

export const directive = new IssuedDirective({
  id: "d1",
  round: 1,
  directive: new Directive({
    topic: "Find the current record efficiency of research solar cells and who set it.",
    perspective: "Technical, from laboratory measurements",
    evidenceNeeded: "Certified efficiency charts or lab announcements",
    priority: 1
  })
})

/** A page long enough to be summarised. */
export const page = (url: string, title: string, sentence: string): StaticWeb.Page => ({
  url,
  title,
  content: Array.from({ length: 8 }, (_, i) => `${sentence} (paragraph ${i + 1}).`).join(" ")
})

export const pages: ReadonlyArray<StaticWeb.Page> = [
  page(
    "https://www.nrel.gov/pv/cell-efficiency",
    "Best Research-Cell Efficiency Chart",
    "NREL certifies a record of 47.6 percent for a four-junction solar cell"
  ),
  page(
    "https://ise.fraunhofer.de/press/record",
    "Fraunhofer ISE sets a solar cell world record",
    "Fraunhofer ISE reached 47.6 percent efficiency under concentrated sunlight"
  ),
  page(
    "https://example.org/perovskite",
    "Perovskite tandem cells reach new heights",
    "Perovskite silicon tandem solar cells passed 33 percent efficiency in 2023"
  ),
  { url: "https://example.org/short", title: "Short solar note", content: "A short solar note on efficiency." }
]

export const summaryReply = (summary: string): ScriptedModel.Reply =>
  ScriptedModel.json({ summary, excerpts: ["47.6 percent"] })

export const compressionReply = (
  findings: string,
  brief = "Covered: records\nKey findings: 47.6% [1]\nConfidence: medium\nGaps: none"
) => `## Findings\n${findings}\n\n## Supervisor brief\n${brief}`

export interface RunOptions {
  readonly researcher: ScriptedModel.Script | ScriptedModel.Options
  readonly summarization?: ScriptedModel.Script | ScriptedModel.Options | undefined
  readonly compression?: ScriptedModel.Script | ScriptedModel.Options | undefined
  readonly web?: Partial<StaticWeb.Options> | undefined
  /** Search results carry only their snippet, as some providers give. */
  readonly snippetsOnly?: boolean | undefined
  readonly config?: Partial<typeof ResearchConfig.ResearchConfig.Encoded> | undefined
  readonly knownSources?: ReadonlyArray<Source> | undefined
  readonly shouldStop?: Effect.Effect<boolean> | undefined
  readonly brief?: Brief | undefined
}

/** The layers of a run, without running it (for tests that fork the unit). */
export const layers = (options: RunOptions) =>
  Layer.mergeAll(
    Summarizer.layer.pipe(
      Layer.provideMerge(
        ScriptedModel.layerRouter({
          default: ["unexpected call"],
          roles: {
            researcher: options.researcher,
            summarization: options.summarization ?? [summaryReply("A summary of the page: 47.6 percent.")],
            compression: options.compression ?? [compressionReply("The record is 47.6% [1].")]
          }
        })
      )
    ),
    webLayer(options),
    ResearchEvents.layer
  )

const webLayer = (options: RunOptions) => {
  const web = StaticWeb.layer({ pages, ...options.web })
  if (options.snippetsOnly !== true) return web
  const snippets = Layer.effect(
    SearchProvider.SearchProvider,
    Effect.map(SearchProvider.SearchProvider, (search) => ({
      name: search.name,
      search: (query: string, searchOptions: SearchProvider.SearchOptions) =>
        search.search(query, { ...searchOptions, includeRawContent: false })
    }))
  )
  return Layer.provideMerge(snippets, web)
}

export const input = (options: RunOptions): Effect.Effect<ResearchUnit.Input> =>
  Effect.map(ResearchConfig.decode(options.config ?? {}).pipe(Effect.orDie), (config) => ({
    task: Task.make({ query: "What is the record efficiency of solar cells?", config, brief: options.brief }),
    directive,
    knownSources: options.knownSources ?? [],
    shouldStop: options.shouldStop ?? Effect.succeed(false)
  }))

/** Runs a unit and returns its output, every model call (with its role) and the events it published. */
export const runUnit = (options: RunOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const events = yield* ResearchEvents.ResearchEvents
      const queue = yield* events.subscribe
      const output = yield* ResearchUnit.run(yield* input(options))
      const calls = yield* ScriptedModel.calls
      const published = yield* Queue.takeAll(queue)
      return { output, calls, events: [...published] }
    })
  ).pipe(Effect.provide(layers(options)))

/** The calls made in one role. */
export const callsOf = (calls: ReadonlyArray<ScriptedModel.RecordedCall>, role: string) =>
  calls.filter((call) => call.role === role)

/** The text of the last message of a request. */
export const lastMessage = (request: LanguageModel.GenerateRequest): string => {
  const last = request.messages[request.messages.length - 1]
  return last === undefined ? "" : last._tag === "assistant" ? last.content : last.content
}

/** The tool results of a request, in order. */
export const toolResults = (request: LanguageModel.GenerateRequest): ReadonlyArray<LanguageModel.ToolResultMessage> =>
  request.messages.filter((m): m is LanguageModel.ToolResultMessage => m._tag === "tool")
