// Run by .ci/run inside a fresh project that installed the packed packages (not the workspace): every subpath each
// package exports imports, and docs/library.md's library wiring researches a question against the emulator of
// `@deep-research/emulator`. Exits non-zero on any failure.
import { Pipeline, ResearchEvents, Resilience, Summarizer } from "@deep-research/core"
import { ModelSpec, SqlSessionStore, Tavily } from "@deep-research/providers"
import { Emulator } from "@deep-research/emulator"
import { Effect, Layer, Redacted } from "effect"
import { readFileSync } from "node:fs"

for (const name of ["core", "emulator", "providers", "evaluation", "cli"]) {
  const manifest = JSON.parse(
    readFileSync(new URL(`./node_modules/@deep-research/${name}/package.json`, import.meta.url), "utf8")
  )
  for (const subpath of Object.keys(manifest.exports ?? { ".": "" })) {
    if (subpath.includes("*")) continue
    const specifier = `@deep-research/${name}${subpath.slice(1)}`
    const module = await import(specifier)
    if (Object.keys(module).length === 0) throw new Error(`${specifier} exports nothing`)
    console.log(`imported ${specifier}`)
  }
}

const research = Effect.gen(function* () {
  const emulator = yield* Emulator.start()
  yield* Emulator.simulate(emulator)
  const live = Layer.mergeAll(
    Summarizer.layer,
    Tavily.layer({ apiKey: Redacted.make("tvly-ci"), baseUrl: emulator.baseUrl("tavily") }),
    SqlSessionStore.layerSqlite("./deep-research.db"),
    ResearchEvents.layer
  ).pipe(
    Layer.provideMerge(
      ModelSpec.layer({
        default: "openai:gpt-4.1",
        tiers: { efficient: "openai:gpt-4.1-mini" },
        providers: { openai: { apiKey: Redacted.make("sk-ci"), baseUrl: emulator.baseUrl("openai") } }
      })
    ),
    Layer.provide(Resilience.layerDefault)
  )
  return yield* Pipeline.research("How did the 2008 crisis change bank capital rules?", {
    config: { maxSupervisionRounds: 2 }
  }).pipe(Effect.provide(live))
}).pipe(Effect.scoped)

const session = await Effect.runPromise(research)
if (session.status !== "completed" || (session.report?.citations.length ?? 0) === 0) {
  throw new Error(`the library run ended ${session.status} with ${session.report?.citations.length ?? 0} citations`)
}
console.log(`library run: ${session.status}, ${session.report.citations.length} citations`)
