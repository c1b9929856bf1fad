/**
 * `deep-research serve` of the built CLI as the spawn tests drive it: started on a port of its choosing over a
 * sandbox's store, asked over HTTP with Node's own `fetch`, its sessions polled until they settle.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { describeRun, type Sandbox, start } from "./builtCli.js"

export const Started = Schema.Struct({ sessionId: Schema.String, status: Schema.String })
export const Listed = Schema.Array(Schema.Struct({ id: Schema.String, status: Schema.String }))
export const Status = Schema.Struct({ status: Schema.String })

/** A `serve --simulate` of the built CLI on a port of its choosing, once it says where it listens. */
export const serving = (box: Sandbox, extra: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const server = start(box, ["serve", "--simulate", "--no-clarify", "--port", "0", ...extra], env)
    for (let waited = 0; waited < 600; waited++) {
      const url = /(http:\/\/127\.0\.0\.1:\d+)\//.exec(server.output().stderr)?.[1]
      if (url !== undefined) return { server, url }
      if (server.child.exitCode !== null) break
      yield* Effect.sleep("100 millis")
    }
    const finished = yield* Effect.promise(() => {
      server.child.kill("SIGKILL")
      return server.done
    })
    return yield* Effect.dieMessage(`serve did not start:\n${describeRun(finished)}`)
  })

export const getJson = <A, I>(schema: Schema.Schema<A, I>, url: string) =>
  Effect.promise(async () => Schema.decodeUnknownSync(schema)(await (await fetch(url)).json()))

/** POSTs a session; its id when acknowledged (202), else the status and the answer's text. */
export const post = (url: string, question: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/api/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question, allowClarification: false })
    })
    const text = await response.text()
    return response.status === 202
      ? { acknowledged: Schema.decodeUnknownSync(Schema.parseJson(Started))(text).sessionId }
      : { status: response.status, text }
  })

/** Polls each session's status until none is queued or running; bounded. */
export const awaitSettled = (url: string, ids: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    let statuses: Record<string, string> = {}
    for (let round = 0; round < 900; round++) {
      statuses = {}
      for (const id of ids) statuses[id] = (yield* getJson(Status, `${url}/api/sessions/${id}`)).status
      if (Object.values(statuses).every((status) => status !== "queued" && status !== "running")) return statuses
      yield* Effect.sleep("200 millis")
    }
    return statuses
  })
