/**
 * A source policy that could never hold is refused the same by every door, before anything runs: a day the calendar
 * has not (2023-02-30), a window that ends before it starts, a domain that names no host (`--include-domains ""`
 * from an unset shell variable, `https://`). Accepted, each would run: an empty include list as no policy at all, a
 * host that matches nothing as a policy that leaves every result out.
 */
import { SourcePolicy } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as CliConfig from "../src/CliConfig.js"
import * as Runs from "../src/Runs.js"
import { connected } from "./McpHarness.js"
import { post, served } from "./ServeHarness.js"

const env = { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "tvly-x", HOME: "/home/u" }

const refusedByCli = (flags: CliConfig.Flags): string => {
  const result = CliConfig.resolve(flags, env, undefined)
  if (Either.isRight(result)) return assert.fail(`expected ${JSON.stringify(flags)} to be refused`)
  return result.left.message
}

describe("a source policy that cannot hold", () => {
  it("the CLI refuses it, naming the flag's setting and what is wrong", () => {
    assert.include(refusedByCli({ since: "2023-02-30" }), "since: 2023-02-30 is not a day of the calendar")
    assert.include(refusedByCli({ until: "2023-02-29" }), "until: 2023-02-29 is not a day of the calendar")
    assert.include(
      refusedByCli({ since: "2024-01-01", until: "2023-01-01" }),
      "until: until (2023-01-01) is before since (2024-01-01)"
    )
    assert.include(refusedByCli({ includeDomains: "" }), "includeDomains.0: expected a host name")
    assert.include(refusedByCli({ includeDomains: "a.org," }), "includeDomains.1: expected a host name")
    assert.include(refusedByCli({ excludeDomains: "https://" }), `excludeDomains.0: "https://" names no host`)
    assert.include(refusedByCli({ includeDomains: "me@a.org" }), `"me@a.org" is not a host name`)
    assert.include(refusedByCli({ sources: "" }), "sources.0: Expected")
  })

  it("a leap day, a URL and a port are taken as the day and the host they name", () => {
    const resolved = CliConfig.resolve(
      { since: "2024-02-29", includeDomains: "https://www.nih.gov/health, who.int:443" },
      env,
      undefined
    )
    if (Either.isLeft(resolved)) return assert.fail(resolved.left.message)
    const policy = SourcePolicy.fromSettings(resolved.right.research)
    assert.deepStrictEqual(policy.includeDomains, ["nih.gov", "who.int"])
    assert.isUndefined(
      SourcePolicy.check(policy, { url: "https://www.who.int/news", provider: "tavily", publishedDate: "2025-01-02" })
    )
  })

  it.scopedLive("the HTTP API answers it with a 400 that says each fault, and starts nothing", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const backwards = yield* post(`${s.url}/api/sessions`, {
        question: "How do tides work?",
        since: "2024-01-01",
        until: "2023-01-01"
      })
      assert.strictEqual(backwards.status, 400)
      assert.strictEqual(
        JSON.parse(backwards.text).message,
        "Invalid input: 'until': until (2023-01-01) is before since (2024-01-01)."
      )
      const noDay = yield* post(`${s.url}/api/sessions`, {
        question: "How do tides work?",
        since: "2023-02-30",
        includeDomains: ["https://"]
      })
      assert.strictEqual(noDay.status, 400)
      assert.include(JSON.parse(noDay.text).message, "'since': 2023-02-30 is not a day of the calendar")
      assert.include(JSON.parse(noDay.text).message, `'includeDomains.0': "https://" names no host`)
      assert.deepStrictEqual(yield* s.runs.list, [], "no session was started")
    })
  )

  it.scopedLive("MCP's start_research refuses it the same way", () =>
    Effect.gen(function* () {
      const mcp = yield* connected({})
      const said = yield* mcp.call("start_research", {
        question: "How do tides work?",
        since: "2024-01-01",
        until: "2023-01-01"
      })
      assert.include(said, "until (2023-01-01) is before since (2024-01-01)")
    })
  )

  it("a client's options go through the same check (Runs.configFor)", () => {
    const resolved = CliConfig.resolve({}, env, undefined)
    if (Either.isLeft(resolved)) return assert.fail(resolved.left.message)
    assert.isTrue(Either.isLeft(Runs.configFor(resolved.right, { until: "2023-02-29" })))
    assert.isTrue(Either.isRight(Runs.configFor(resolved.right, { until: "2024-02-29" })))
  })
})
