/** A `deep-research serve` in this process over the emulator, on a free loopback port, for the Serve tests. */
import { Research, Session, SessionStore } from "@deep-research/core"
import * as HttpServer from "@effect/platform/HttpServer"
import { Emulator } from "@deep-research/emulator"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import type * as Runs from "../src/Runs.js"
import * as ServingRuns from "../src/ServingRuns.js"
import * as Serve from "../src/Serve.js"
import * as Store from "../src/Store.js"

export interface Served {
  readonly url: string
  readonly runs: Runs.Runs
  readonly store: string
  readonly resolved: CliConfig.Resolved
}

/**
 * Serves a simulated configuration from a fresh store folder for the life of the scope, with `env` as the
 * environment; a token of the options is in it too, as `serve` reads it there.
 */
export const served = (
  flags: CliConfig.Flags = {},
  options: Partial<Serve.Options> = {},
  env: CliConfig.Environment = {}
) =>
  Effect.gen(function* () {
    const store = yield* freshStore
    const token = options.token === undefined ? {} : { DEEP_RESEARCH_API_TOKEN: Redacted.value(options.token) }
    return yield* serve(
      CliConfig.resolve({ simulate: true, store, ...flags }, { ...token, ...env }, undefined),
      store,
      options
    )
  })

/**
 * A server over a cluster's database with no key at all, as a team runs its front door: the workers have the models
 * and the search.
 */
export const servedKeyless = (database: string) =>
  Effect.gen(function* () {
    const store = yield* freshStore
    return yield* serve(CliConfig.resolve({ store, database }, {}, undefined, "submission"), store, {})
  })

/**
 * Serves the simulated research world through an emulator of the test's own that answers every request after
 * `latency`, as vendors take their time: a run lasts long enough to be watched while it runs.
 */
export const servedSlowly = (
  latency: Duration.DurationInput,
  flags: CliConfig.Flags = {},
  options: Partial<Serve.Options> = {}
) =>
  Effect.gen(function* () {
    const emulator = yield* Emulator.start()
    yield* Emulator.simulate(emulator)
    yield* emulator.setLatency("all", latency)
    const store = yield* freshStore
    const env = {
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: emulator.baseUrl("openai"),
      TAVILY_API_KEY: "tvly-test",
      TAVILY_BASE_URL: emulator.baseUrl("tavily")
    }
    const resolved = CliConfig.resolve(
      { model: "openai:simulated-gpt", search: "tavily", store, ...flags },
      env,
      undefined
    )
    return yield* serve(resolved, store, options)
  })

/** Serves `flags` over the environment `env` as given (no simulation: the test's own upstreams), from a fresh store. */
export const servedWith = (flags: CliConfig.Flags, env: CliConfig.Environment) =>
  Effect.gen(function* () {
    const store = yield* freshStore
    return yield* serve(CliConfig.resolve({ store, ...flags }, env, undefined), store, {})
  })

const freshStore = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-serve-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const serve = (
  resolved: Either.Either<CliConfig.Resolved, CliConfig.ConfigError>,
  store: string,
  options: Partial<Serve.Options>
) =>
  Effect.gen(function* () {
    if (Either.isLeft(resolved)) return yield* Effect.dieMessage(resolved.left.message)
    const runs = yield* Effect.orDie(ServingRuns.make(resolved.right))
    const database = resolved.right.credentials.databaseUrl
    const context = yield* Layer.build(Serve.layer(runs, { ...Serve.defaults, port: 0, database, ...options }))
    const url = Serve.urlOf(Context.get(context, HttpServer.HttpServer).address)
    return { url, runs, store, resolved: resolved.right } satisfies Served
  })

/** A fetch as an Effect. */
export const request = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

/** JSON body of a POST. */
export const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  request(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })

/** Polls a session's status until it is no longer running. */
export const settled = (base: string, sessionId: string, headers: Record<string, string> = {}) =>
  Effect.gen(function* () {
    for (let polls = 0; polls < 1200; polls++) {
      const response = yield* request(`${base}/api/sessions/${sessionId}`, { headers })
      const status: unknown = JSON.parse(response.text)
      if (typeof status === "object" && status !== null && Reflect.get(status, "running") === false) return status
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage(`session ${sessionId} never settled`)
  })

/** Stores a session that waits for the answer to a clarifying question, as a run that asked one leaves it. */
export const seedAwaiting = (s: Served, sessionId: string, question: string) =>
  Effect.gen(function* () {
    const store = yield* SessionStore.SessionStore
    yield* store.save(
      new Session.Session({
        version: Session.currentVersion,
        id: sessionId,
        query: "How do tides work?",
        createdAt: 1_700_000_000_000,
        updatedAt: 1_700_000_000_000,
        config: s.resolved.research,
        status: "awaiting_clarification",
        clarification: new Research.ClarificationRecord({
          decision: new Research.Clarification({
            needClarification: true,
            question,
            verification: "I will research tides."
          })
        }),
        phasesCompleted: ["clarification"],
        rounds: [],
        sources: [],
        metrics: [],
        usage: []
      })
    )
  }).pipe(Effect.provide(Store.storeLayer(s.resolved.storeDir)), Effect.orDie)

/** The events of an SSE body: id (when given), event name (when given) and data. */
export const sseEvents = (text: string) =>
  text
    .split("\n\n")
    .filter((block) => block.split("\n").some((line) => line.startsWith("data:")))
    .map((block) => {
      const field = (name: string) =>
        block
          .split("\n")
          .filter((line) => line.startsWith(`${name}: `))
          .map((line) => line.slice(name.length + 2))
      return { id: field("id")[0], event: field("event")[0], data: field("data").join("\n") }
    })
