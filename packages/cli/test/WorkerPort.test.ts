/**
 * `deep-research worker` on a port another process holds (a worker already running on this machine, both on the
 * default port) says that the port is taken and which option chooses another. Run in this process, over PGlite (or
 * the server DEEP_RESEARCH_TEST_DATABASE_URL names).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as net from "node:net"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import { cli, describeRan } from "./support/inProcess.js"

/** A loopback port this test listens on, for the life of the scope. */
const heldPort = Effect.acquireRelease(
  Effect.async<net.Server>((resume) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
).pipe(
  Effect.map((server) => {
    const address = server.address()
    return typeof address === "object" && address !== null ? address.port : 0
  })
)

describe("deep-research worker", () => {
  it.scopedLive(
    "on a port already taken says so, and that --port chooses another",
    () =>
      Effect.gen(function* () {
        const database = yield* PgDatabase.make
        if (database.kind === "pglite") {
          yield* Effect.acquireRelease(
            Effect.sync(() => (process.env["DEEP_RESEARCH_SHARD_LOCKS"] = "table")),
            () => Effect.sync(() => delete process.env["DEEP_RESEARCH_SHARD_LOCKS"])
          )
        }
        const port = yield* heldPort
        const ran = yield* Effect.promise(() =>
          cli(["worker", "--database", database.url, "--port", String(port), "--host", "127.0.0.1", "--simulate"])
        )
        assert.strictEqual(ran.code, 2, describeRan(ran))
        assert.include(
          ran.stderr,
          `the worker could not start: port ${port} on 127.0.0.1 is taken (by another deep-research worker on this ` +
            "machine?): choose another with --port"
        )
      }),
    60_000
  )
})
