/**
 * A decision about a plan that cannot be applied is refused to its sender: an edit that drops every directive (an
 * empty list, or only blank ones) is a 400 over HTTP and leaves the session waiting for its review. It was answered
 * 202 "running", and the run it started failed out of sight, the session still `awaiting_review`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { connected } from "./McpHarness.js"
import { post, served, settled } from "./ServeHarness.js"

describe("a review of a plan over HTTP", () => {
  it.scopedLive("an edit with no directive left is a 400 and the plan still waits; an approval then runs it", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const created = yield* post(`${s.url}/api/sessions`, { question: "How do ocean tides work?", review: true })
      assert.strictEqual(created.status, 202, created.text)
      const id: string = JSON.parse(created.text).sessionId
      const waiting = yield* settled(s.url, id)
      assert.strictEqual(Reflect.get(waiting as object, "status"), "awaiting_review")
      for (const directives of [[], ["  "]]) {
        const refused = yield* post(`${s.url}/api/sessions/${id}/review`, { action: "edit", directives })
        assert.strictEqual(refused.status, 400, refused.text)
        assert.include(JSON.parse(refused.text).message, "an edited plan needs at least one directive")
        const still = yield* settled(s.url, id)
        assert.strictEqual(Reflect.get(still as object, "status"), "awaiting_review")
      }
      const approved = yield* post(`${s.url}/api/sessions/${id}/review`, { action: "approve" })
      assert.strictEqual(approved.status, 202, approved.text)
      const done = yield* settled(s.url, id)
      assert.strictEqual(Reflect.get(done as object, "status"), "completed")
    })
  )

  it.scopedLive("MCP's get_status says that a session may await review, with its plan, and the policy's removals", () =>
    Effect.gen(function* () {
      const mcp = yield* connected({})
      const { tools } = yield* Effect.promise(() => mcp.client.listTools())
      const description = tools.find((tool) => tool.name === "get_status")?.description ?? ""
      for (const words of ["awaiting_review", "review_plan", "sourcePolicyRemovals"]) assert.include(description, words)
    })
  )
})
