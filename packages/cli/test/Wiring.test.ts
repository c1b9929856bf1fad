import { Pipeline, SessionStore } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import * as Store from "../src/Store.js"
import * as Wiring from "../src/Wiring.js"

const simulated = (flags: CliConfig.Flags, store: string): CliConfig.Resolved => {
  const result = CliConfig.resolve({ ...flags, simulate: true, store, noClarify: true }, {}, undefined)
  if (Either.isLeft(result)) return assert.fail(result.left.message)
  return result.right
}

const tempStore = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-wiring-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

describe("Wiring", () => {
  it.live(
    "a simulated run reaches every vendor it names through the emulator, with no key in the environment",
    () =>
      Effect.gen(function* () {
        const store = yield* tempStore
        const resolved = simulated(
          { model: "anthropic:claude-sonnet-4-6", search: "exa,semantic-scholar,perplexity" },
          store
        )
        const session = yield* Pipeline.research("What limits battery recycling?", {
          config: resolved.research,
          clarification: "proceed"
        }).pipe(Effect.provide(Wiring.layer(resolved)))
        assert.strictEqual(session.status, "completed")
        const providers = new Set(session.sources.flatMap((source) => source.provider.split(",")))
        assert.includeMembers([...providers], ["exa", "semantic-scholar", "perplexity"])
        assert.isTrue(session.usage.some((usage) => usage.calls > 0))
      }).pipe(Effect.scoped),
    60_000
  )

  it.live(
    "a simulated run's report is stored with the simulated banner, in session.json and report.md",
    () =>
      Effect.gen(function* () {
        const store = yield* tempStore
        const resolved = simulated({}, store)
        const stored = yield* Effect.gen(function* () {
          const session = yield* Pipeline.research("How do tides work?", {
            config: resolved.research,
            clarification: "proceed"
          })
          return yield* Effect.flatMap(SessionStore.SessionStore, (sessions) => sessions.load(session.id))
        }).pipe(Effect.provide(Wiring.layer(resolved)))
        assert.isTrue(Store.isSimulatedReport(stored.report?.markdown ?? ""))
        const file = nodePath.join(Store.sessionsDirectory(resolved), stored.id, "report.md")
        assert.isTrue(Store.isSimulatedReport(fs.readFileSync(file, "utf8")))
      }).pipe(Effect.scoped),
    60_000
  )
})
