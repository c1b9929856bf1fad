/**
 * A model server that does not answer, found before a session is made: one quick request to each server a run will
 * use, a configuration error (exit 2) naming the address tried and the usual cause, and nothing stored.
 */
import { assert, describe, it } from "@effect/vitest"
import * as net from "node:net"
import * as nodePath from "node:path"
import * as CliConfig from "../src/CliConfig.js"
import { endpointsOf } from "../src/internal/config/modelProbe.js"
import { describeRan, run, tempDir } from "./support/inProcess.js"

/** A loopback port nothing listens on: one the system gave out and that was closed again. */
const deadPort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

describe("a model server that does not answer", () => {
  it("an Ollama model: exit 2 with the address and 'Is Ollama running?', and no session stored", async () => {
    const dir = tempDir()
    const port = await deadPort()
    const env = {
      HOME: dir,
      DEEP_RESEARCH_HOME: nodePath.join(dir, "store"),
      OLLAMA_BASE_URL: `http://127.0.0.1:${port}/v1`
    }
    const ran = await run(["--model", "ollama:qwen3", "--no-clarify", "How do tides work?"], { cwd: dir, env })
    assert.strictEqual(ran.code, 2, describeRan(ran))
    assert.include(ran.stderr, `Cannot reach the model server of ollama:qwen3 at http://127.0.0.1:${port}/v1:`)
    assert.include(ran.stderr, "the connection was refused")
    assert.include(ran.stderr, "Is Ollama running?")
    assert.include(ran.stderr, "No session was made.")
    const listed = await run(["list"], { cwd: dir, env })
    assert.include(listed.stdout, "No sessions yet.", describeRan(listed))
  })

  it("an OpenAI-compatible server at OPENAI_BASE_URL: the same, with the variable named", async () => {
    const dir = tempDir()
    const port = await deadPort()
    const env = {
      HOME: dir,
      DEEP_RESEARCH_HOME: nodePath.join(dir, "store"),
      OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`
    }
    const ran = await run(["--model", "openai:qwen3", "--no-clarify", "How do tides work?"], { cwd: dir, env })
    assert.strictEqual(ran.code, 2, describeRan(ran))
    assert.include(ran.stderr, `at http://127.0.0.1:${port}/v1: the connection was refused`)
    assert.include(ran.stderr, "Is the server OPENAI_BASE_URL names running")
  })

  it("probes each server once, whichever roles use it", () => {
    const endpoints = endpointsOf({
      models: {
        default: "ollama:qwen3",
        roles: { report: "ollama:llama3", summarization: "openai:gpt-4.1-mini" },
        tiers: {}
      },
      credentials: CliConfig.credentialsFrom({ OPENAI_BASE_URL: "http://127.0.0.1:8000/v1" })
    })
    assert.deepStrictEqual(
      endpoints.map((e) => e.baseUrl),
      ["http://localhost:11434/v1", "http://127.0.0.1:8000/v1"]
    )
  })
})
