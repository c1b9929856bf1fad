/**
 * Research with no key at all, in process, as the CLI wires it: a local OpenAI-compatible model (the emulator's
 * simulated world, at OPENAI_BASE_URL) and the keyless search APIs (the emulator's, at their base URL variables).
 * Without --search the keyless default set researches the question to a cited report; with --search each keyless
 * provider alone does.
 */
import { Pipeline } from "@deep-research/core"
import { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import * as Wiring from "../src/Wiring.js"

const tempStore = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-keyless-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** The environment of a machine with a local model server and no key: every base URL at the emulator. */
const keylessEnvironment = (emulator: Emulator.Handle, home: string) => ({
  HOME: home,
  OPENAI_BASE_URL: emulator.baseUrl("openai"),
  WIKIPEDIA_BASE_URL: emulator.baseUrl("wikipedia"),
  ARXIV_BASE_URL: emulator.baseUrl("arxiv"),
  OPENALEX_BASE_URL: emulator.baseUrl("openalex"),
  PUBMED_BASE_URL: emulator.baseUrl("pubmed"),
  SEARXNG_URL: emulator.baseUrl("searxng"),
  DEEP_RESEARCH_CONTACT: "ops@example.org"
})

const research = (question: string, search: string | undefined) =>
  Effect.gen(function* () {
    const store = yield* tempStore
    const emulator = yield* Emulator.start()
    yield* Emulator.simulate(emulator, { directives: 1 })
    const env = keylessEnvironment(emulator, store)
    assert.isFalse(
      Object.keys(env).some((name) => name.endsWith("_KEY")),
      "no key anywhere"
    )
    const resolved = CliConfig.resolve({ model: "openai:local-model", search, store, noClarify: true }, env, undefined)
    if (Either.isLeft(resolved)) return assert.fail(resolved.left.message)
    const session = yield* Pipeline.research(question, {
      config: resolved.right.research,
      clarification: "proceed"
    }).pipe(Effect.provide(Wiring.layer(resolved.right)))
    const providers = new Set(session.sources.flatMap((source) => source.provider.split(",")))
    return { session, providers, emulator, resolved: resolved.right }
  })

describe("research with no key", () => {
  it.live(
    "the keyless default set researches a German question to a cited report, Wikipedia in German",
    () =>
      Effect.gen(function* () {
        const { session, providers, emulator, resolved } = yield* research(
          "Wie viel kostet der Betrieb einer Wärmepumpe im Vergleich zu einer Gasheizung?",
          undefined
        )
        assert.deepStrictEqual(resolved.search, ["searxng", "wikipedia"], "OpenAlex only with OPENALEX_API_KEY")
        assert.strictEqual(session.status, "completed")
        assert.includeMembers([...providers], ["searxng", "wikipedia"])
        assert.lengthOf(yield* emulator.requests("openalex.works"), 0)
        assert.isAbove(session.report?.citations.length ?? 0, 0)
        const editions = (yield* emulator.requests("wikipedia.api")).map((request) => request.path)
        assert.isAbove(editions.length, 0)
        assert.isTrue(
          editions.every((path) => path === "/wikipedia/de/w/api.php"),
          editions.join(", ")
        )
        for (const request of yield* emulator.requests()) {
          if (request.endpoint === "openai.chat") continue
          assert.strictEqual(request.headers["user-agent"], "deep-research/0.1 (ops@example.org)", request.endpoint)
        }
      }).pipe(Effect.scoped),
    60_000
  )

  for (const search of ["wikipedia", "arxiv", "openalex", "pubmed", "searxng"] as const) {
    it.live(
      `--search ${search} alone researches to a cited report`,
      () =>
        Effect.gen(function* () {
          const { session, providers } = yield* research("How do heat pumps compare with gas boilers?", search)
          assert.strictEqual(session.status, "completed")
          assert.deepStrictEqual([...providers], [search])
          assert.isAbove(session.report?.citations.length ?? 0, 0)
          const scholarly = search === "arxiv" || search === "openalex" || search === "pubmed"
          assert.strictEqual(
            session.sources.every((source) => source.work !== undefined),
            scholarly,
            "scholarly sources carry their work, web pages none"
          )
          if (search === "openalex") {
            assert.isTrue(
              session.sources.some((source) => source.work?.preprint === true),
              "a preprint is marked"
            )
          }
        }).pipe(Effect.scoped),
      60_000
    )
  }
})
