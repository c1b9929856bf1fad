/**
 * Every numeric setting has one upper bound, the same wherever it is given: the HTTP API (its OpenAPI document and its
 * answers), MCP's input schema and its answers, the CLI's flags, its environment and its config file. Over it is a 400,
 * a tool error or a configuration error naming the bound.
 */
import { resilienceBounds, upperBounds } from "@deep-research/core/Defaults"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as CliConfig from "../src/CliConfig.js"
import { program } from "../src/main.js"
import { settingBounds } from "../src/RunSchema.js"
import { connected } from "./McpHarness.js"
import { post, request, served } from "./ServeHarness.js"

/** Each setting a client gives, with its bound and a value over it. */
const settings = Object.entries(settingBounds).filter(([name]) => name !== "maxSessions")

const field = (value: unknown, name: string): unknown =>
  typeof value === "object" && value !== null ? Reflect.get(value, name) : undefined

/** The `maximum` a JSON Schema gives a property, on it or on the one schema it refines (`allOf: [{$ref, maximum}]`). */
const maximumOf = (schema: unknown, name: string): unknown => {
  const property = field(field(schema, "properties"), name)
  return field(property, "maximum") ?? field(field(field(property, "allOf"), "0"), "maximum")
}

describe("the bounds of the settings", () => {
  it.scopedLive("the HTTP API publishes them and answers a value over one with a 400 naming it", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const spec = JSON.parse((yield* request(`${s.url}/openapi.json`)).text)
      for (const [name, bound] of settings) {
        assert.strictEqual(maximumOf(spec.components.schemas.CreateSession, name), bound, name)
        const refused = yield* post(`${s.url}/api/sessions`, { question: "Tides?", [name]: bound + 1 })
        assert.strictEqual(refused.status, 400, name)
        assert.strictEqual(
          JSON.parse(refused.text).message,
          `'${name}': Expected a number less than or equal to ${bound}, actual ${bound + 1}.`
        )
      }
      const huge = yield* post(`${s.url}/api/sessions`, { question: "Tides?", concurrency: 1_000_000_000 })
      assert.strictEqual(huge.status, 400)
      assert.deepStrictEqual(yield* s.runs.list, [], "no session was started")
    })
  )

  it.scopedLive("MCP's start_research publishes them and refuses a value over one, naming it", () =>
    Effect.gen(function* () {
      const mcp = yield* connected({})
      const { tools } = yield* Effect.promise(() => mcp.client.listTools())
      const start = tools.find((tool) => tool.name === "start_research")
      for (const [name, bound] of settings) {
        assert.strictEqual(maximumOf(start?.inputSchema, name), bound, name)
        const said = yield* mcp.call("start_research", { question: "Tides?", [name]: bound + 1 })
        assert.strictEqual(
          said,
          `Invalid arguments: '${name}': Expected a number less than or equal to ${bound}, actual ${bound + 1}.`
        )
      }
    })
  )

  it("the CLI refuses a value over one from a flag, the environment or the config file, naming it", () => {
    const refusal = (flags: CliConfig.Flags, env: CliConfig.Environment = {}, file?: CliConfig.FileConfig) =>
      Either.match(CliConfig.resolve({ simulate: true, store: "/tmp/unused", ...flags }, env, file), {
        onLeft: (error) => error.message,
        onRight: () => "accepted"
      })
    const flagNames: Record<string, string> = {
      maxRounds: "--max-rounds",
      concurrency: "--concurrency",
      maxToolCalls: "--max-tool-calls",
      budgetTokens: "--budget-tokens",
      budgetUsd: "--budget-usd",
      maxSessions: "--max-sessions"
    }
    const envNames: Record<string, string> = {
      maxRounds: "DEEP_RESEARCH_MAX_ROUNDS",
      concurrency: "DEEP_RESEARCH_CONCURRENCY",
      maxToolCalls: "DEEP_RESEARCH_MAX_TOOL_CALLS",
      budgetTokens: "DEEP_RESEARCH_BUDGET_TOKENS",
      budgetUsd: "DEEP_RESEARCH_BUDGET_USD",
      maxSessions: "DEEP_RESEARCH_MAX_SESSIONS"
    }
    for (const [name, bound] of Object.entries(settingBounds)) {
      assert.strictEqual(refusal({ [name]: bound }), "accepted", name)
      assert.strictEqual(
        refusal({ [name]: bound + 1 }),
        `${flagNames[name]} must be at most ${bound} (got ${bound + 1})`,
        name
      )
      assert.strictEqual(
        refusal({}, { [envNames[name] ?? ""]: String(bound + 1) }),
        `${envNames[name]} must be at most ${bound} (got "${bound + 1}")`,
        name
      )
      const file = CliConfig.decodeFileConfig(JSON.stringify({ [name]: bound + 1 }), "deep-research.config.json")
      assert.isTrue(Either.isLeft(file), name)
      if (Either.isLeft(file)) {
        assert.include(
          file.left.message,
          `${name}: Expected a number less than or equal to ${bound}, actual ${bound + 1}`,
          name
        )
      }
    }
  })

  it("the config file's research knobs are bounded too", () => {
    const file = Either.getOrThrow(
      CliConfig.decodeFileConfig(
        JSON.stringify({ research: { maxDirectivesPerRound: 1_000, budget: { maxUsd: 1e9 } } }),
        "deep-research.config.json"
      )
    )
    const resolved = CliConfig.resolve({ simulate: true, store: "/tmp/unused" }, {}, file)
    assert.isTrue(Either.isLeft(resolved))
    if (Either.isLeft(resolved)) {
      assert.include(
        resolved.left.message,
        `maxDirectivesPerRound: Expected a number less than or equal to ${upperBounds.maxDirectivesPerRound}, actual 1000`
      )
      assert.include(
        resolved.left.message,
        `budget.maxUsd: Expected a number less than or equal to ${upperBounds.maxUsd}, actual 1000000000`
      )
    }
  })

  it("the config file's resilience settings are bounded too", () => {
    const file = CliConfig.decodeFileConfig(
      JSON.stringify({
        resilience: { model: { maxRetries: 1_000 }, providers: { tavily: { attemptTimeout: 1e10, burst: 1e9 } } }
      }),
      "deep-research.config.json"
    )
    assert.isTrue(Either.isLeft(file))
    if (Either.isLeft(file)) {
      for (const said of [
        `resilience.model.maxRetries: Expected a number less than or equal to ${resilienceBounds.maxRetries}, actual 1000`,
        `resilience.providers.tavily.attemptTimeout: Expected a number less than or equal to ${resilienceBounds.attemptTimeoutMillis}, actual 10000000000`,
        `resilience.providers.tavily.burst: Expected a number less than or equal to ${resilienceBounds.burst}, actual 1000000000`
      ]) {
        assert.include(file.left.message, said)
      }
    }
  })

  it.live("a port out of range is refused before anything starts, for serve and worker alike", () =>
    Effect.gen(function* () {
      const database = ["--database", "postgres://nobody@127.0.0.1:1/none"]
      const cases: Array<[ReadonlyArray<string>, string]> = [
        [["serve", "--port", "70000"], "--port must be between 0 and 65535, got 70000"],
        [["worker", ...database, "--port", "70000"], "--port must be between 0 and 65535, got 70000"],
        [["worker", ...database, "--health-port", "-1"], "--health-port must be between 0 and 65535, got -1"]
      ]
      for (const [args, message] of cases) {
        const lines: Array<string> = []
        const write = process.stderr.write.bind(process.stderr)
        process.stderr.write = (chunk: string | Uint8Array) => {
          lines.push(String(chunk))
          return true
        }
        const code = yield* Effect.ensuring(
          program(args),
          Effect.sync(() => void (process.stderr.write = write))
        )
        assert.strictEqual(code, 2, args.join(" "))
        assert.include(lines.join(""), message)
      }
    })
  )
})
