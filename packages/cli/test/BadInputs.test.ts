/**
 * Bad inputs, as a new user would type them: each gives one clear line on stderr, the right exit code, nothing on
 * stdout but what the command promises, and never a stack trace. The table grows with new options. The command runs
 * in this process (`support/inProcess.ts`): what it prints and its exit code are the program's; the built command's
 * own exit codes and stderr are checked in `EndToEnd.spawn.test.ts`.
 */
import { Emulator } from "@deep-research/emulator"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as InProcess from "./support/inProcess.js"
import { storedIds } from "./support/storedSession.js"

let sandbox: string

beforeAll(() => {
  sandbox = fs.mkdtempSync(nodePath.join(os.tmpdir(), "bad-inputs-"))
  fs.writeFileSync(nodePath.join(sandbox, "a-file"), "not a folder")
})

afterAll(() => fs.rmSync(sandbox, { recursive: true, force: true }))

/** Runs the command with no key in its environment (or the ones given), its store and home in the sandbox. */
const cli = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): Promise<InProcess.Ran> =>
  InProcess.run(args, {
    cwd: sandbox,
    env: { HOME: nodePath.join(sandbox, "home"), DEEP_RESEARCH_HOME: nodePath.join(sandbox, "store"), ...env }
  })

/** The same, with its home only: for runs against the emulator, with its own store. */
const cliAsync = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>): Promise<InProcess.Ran> =>
  InProcess.run(args, { cwd: sandbox, env: { HOME: nodePath.join(sandbox, "home"), ...env } })

const stackTrace = /\n\s+at |FiberFailure|level=ERROR|node:internal/

interface Case {
  readonly name: string
  readonly args: () => ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
  readonly code: number
  readonly message: RegExp
}

const long = "x/".repeat(5_000)

const cases: ReadonlyArray<Case> = [
  {
    name: "list --store <a regular file>",
    args: () => ["list", "--store", nodePath.join(sandbox, "a-file")],
    code: 2,
    message: /^error: cannot use the session database at .*a-file\/deep-research\.db: .*a-file is not a folder$/m
  },
  {
    name: "list --json --store <a regular file> (stdout stays empty)",
    args: () => ["list", "--json", "--store", nodePath.join(sandbox, "a-file")],
    code: 2,
    message: /is not a folder/
  },
  {
    name: "a run whose store cannot be created (and used to hang)",
    args: () => ["--simulate", "--no-clarify", "--store", "/proc/forbidden", "What is X?"],
    code: 2,
    message: /^error: cannot use the session database at \/proc\/forbidden\/deep-research\.db: /m
  },
  {
    name: "resume ../../x says the id is bad before anything else",
    args: () => ["resume", "../../x"],
    code: 2,
    message: /"\.\.\/\.\.\/x" is not a session id/
  },
  {
    name: "resume of a session the store does not have says so, not that a key is missing",
    args: () => ["resume", "dr-nobody", "--store", nodePath.join(sandbox, "store")],
    code: 2,
    message: /^No session with id dr-nobody$/m
  },
  {
    name: "evaluate of a session the store does not have says so, not that a key is missing",
    args: () => ["evaluate", "dr-nobody", "--store", nodePath.join(sandbox, "store")],
    code: 2,
    message: /^No session with id dr-nobody$/m
  },
  {
    name: "a hostile 10,000-character id is shortened in the message",
    args: () => ["resume", long],
    code: 2,
    message: /"(x\/){20}…" is not a session id/
  },
  {
    name: "--concurrency 100000",
    args: () => ["--simulate", "--concurrency", "100000", "What is X?"],
    code: 2,
    message: /--concurrency must be at most 64 \(got 100000\)/
  },
  {
    name: "--max-rounds 1e9",
    args: () => ["--simulate", "--max-rounds", "1000000000", "What is X?"],
    code: 2,
    message: /--max-rounds must be at most 50/
  },
  {
    name: "--max-rounds abc",
    args: () => ["--simulate", "--max-rounds", "abc", "What is X?"],
    code: 2,
    message: /^--max-rounds takes a whole number, got "abc"$/m
  },
  {
    name: "--max-tool-calls 2.5",
    args: () => ["--simulate", "--max-tool-calls", "2.5", "What is X?"],
    code: 2,
    message: /^--max-tool-calls takes a whole number, got "2\.5"$/m
  },
  {
    name: "--budget-usd 1.5x",
    args: () => ["--simulate", "--budget-usd", "1.5x", "What is X?"],
    code: 2,
    message: /^--budget-usd takes a number, got "1\.5x"$/m
  },
  {
    name: "worker without a database says so, before asking for a model's key",
    args: () => ["worker"],
    code: 2,
    message: /^deep-research worker needs the cluster's database: --database URL or DEEP_RESEARCH_DATABASE_URL$/m
  },
  {
    name: "serve --port 99999 says the port is wrong, before asking for a model's key",
    args: () => ["serve", "--port", "99999"],
    code: 2,
    message: /^--port must be between 0 and 65535, got 99999$/m
  },
  {
    name: "serve on another address without a token says so, before asking for a model's key",
    args: () => ["serve", "--host", "0.0.0.0"],
    code: 2,
    message: /^deep-research serve listens on 0\.0\.0\.0, which other machines can reach: set DEEP_RESEARCH_API_TOKEN/m
  },
  {
    name: "serve --cors with something that is not an origin",
    args: () => ["serve", "--simulate", "--cors", "https://app.example,app.example"],
    code: 2,
    message: /^--cors takes origins such as https:\/\/app\.example, separated by commas; "app\.example" is not one$/m
  },
  {
    name: "--search local without --corpus, simulated or not",
    args: () => ["--simulate", "--search", "local", "What is X?"],
    code: 2,
    message: /^Local search needs --corpus DIR\.$/m
  }
]

describe("bad inputs through the built CLI", () => {
  for (const c of cases) {
    it(c.name, async () => {
      const ran = await cli(c.args(), c.env)
      assert.strictEqual(ran.code, c.code, `${ran.stdout}\n${ran.stderr}`)
      assert.match(ran.stderr, c.message)
      assert.notMatch(`${ran.stdout}${ran.stderr}`, stackTrace)
      assert.isAtMost(ran.stderr.length, 2_000)
      if (c.args().includes("--json") || c.args()[0] === "list" || c.args()[0] === "resume") {
        assert.strictEqual(ran.stdout, "")
      }
    })
  }

  it("serve on a port another program holds says so", async () => {
    const holder = net.createServer()
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve))
    const address = holder.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    try {
      const ran = await cli(["serve", "--simulate", "--port", String(port)])
      assert.strictEqual(ran.code, 2, ran.stderr)
      assert.match(
        ran.stderr,
        new RegExp(
          `^deep-research serve cannot start: listen EADDRINUSE: address already in use 127\\.0\\.0\\.1:${port}$`,
          "m"
        )
      )
    } finally {
      await new Promise((resolve) => holder.close(resolve))
    }
  })

  it("control characters of a question never reach the terminal raw: not in the progress, list or show", async () => {
    const store = nodePath.join(sandbox, "controls")
    const question = "Heat \u001b[31mpumps\u0007 and\rboilers\u0008?"
    const ran = await cli([
      "--simulate",
      "--no-clarify",
      "--store",
      store,
      "--out",
      nodePath.join(store, "r.md"),
      question
    ])
    assert.strictEqual(ran.code, 0, ran.stderr)
    const listed = await cli(["list", "--store", store])
    const id = /^(\S+)/.exec(listed.stdout)?.[1] ?? ""
    const shown = await cli(["show", id, "--store", store])
    for (const output of [ran.stdout, ran.stderr, listed.stdout, shown.stdout]) {
      assert.notMatch(output, /[\u0000-\u0008\u000b-\u001f\u007f]/)
    }
    assert.include(listed.stdout, "Heat \u241b[31mpumps\u2407")
  })

  it("a corpus with nothing readable is a usage error; one of text files without extensions is read, its index kept in the store", async () => {
    const empty = nodePath.join(sandbox, "empty-corpus")
    const texts = nodePath.join(sandbox, "texts")
    fs.mkdirSync(empty)
    fs.mkdirSync(texts)
    fs.writeFileSync(nodePath.join(empty, "photo.bin"), Buffer.from([0, 1, 2, 3, 255]))
    fs.writeFileSync(nodePath.join(texts, "LICENSE"), "Permission is hereby granted to research heat pumps freely.\n")
    const refused = await cli(["--simulate", "--no-clarify", "--corpus", empty, "What is X?"])
    assert.strictEqual(refused.code, 2)
    assert.match(
      refused.stderr,
      /nothing to research in .*empty-corpus: .*1 skipped: photo\.bin \(binary content, not text\)/
    )
    assert.notMatch(refused.stderr, stackTrace)
    const store = nodePath.join(sandbox, "corpus-store")
    const ran = await cli([
      "--simulate",
      "--no-clarify",
      "--search",
      "local",
      "--corpus",
      texts,
      "--store",
      store,
      "--out",
      nodePath.join(store, "r.md"),
      "What is permitted?"
    ])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.match(ran.stderr, /corpus .*texts: 1 files indexed/)
    assert.deepStrictEqual(fs.readdirSync(texts), ["LICENSE"])
    assert.lengthOf(fs.readdirSync(nodePath.join(store, "corpus-index")), 1)
  })

  it("--out naming a folder puts the report inside it, as deep-research-<id>.md; one that cannot be written is a warning", async () => {
    const folder = nodePath.join(sandbox, "reports")
    fs.mkdirSync(folder, { recursive: true })
    const ran = await cli(["--simulate", "--no-clarify", "--out", folder, "How do tides work?"])
    assert.strictEqual(ran.code, 0, ran.stderr)
    const written = /Report: (\S+)/.exec(ran.stdout)?.[1] ?? ""
    assert.match(written, new RegExp(`^${folder}/deep-research-dr-[\\w-]+\\.md$`))
    assert.include(fs.readFileSync(written, "utf8"), "Simulated run")
    const nowhere = await cli([
      "--simulate",
      "--no-clarify",
      "--out",
      nodePath.join(sandbox, "a-file", "r.md"),
      "Tides?"
    ])
    // The research succeeded: the report is in the store, and the warning says where.
    assert.strictEqual(nowhere.code, 0, nowhere.stderr)
    assert.match(
      nowhere.stderr,
      /^warning: the report could not be written to .*a-file\/r\.md \(.*\)\. .*deep-research show/m
    )
  })

  it("a simulated session is evaluated and resumed simulated without --simulate again, instead of asking for a key", async () => {
    const store = nodePath.join(sandbox, "simulated")
    const ran = await cli([
      "--simulate",
      "--no-clarify",
      "--store",
      store,
      "--out",
      nodePath.join(store, "r.md"),
      "What is X?"
    ])
    assert.strictEqual(ran.code, 0, ran.stderr)
    const [id] = storedIds(store)
    const evaluated = await cli(["evaluate", id ?? "", "--store", store])
    assert.strictEqual(evaluated.code, 0, evaluated.stderr)
    assert.include(evaluated.stderr, `[simulated] Session ${id} was made by a simulated run: it is evaluated against`)
    assert.notInclude(evaluated.stderr, "No language model is configured")
    const resumed = await cli(["resume", id ?? "", "--store", store])
    assert.strictEqual(resumed.code, 0, resumed.stderr)
    assert.notInclude(resumed.stderr, "No language model is configured")
  })

  it("the session database is readable by its owner only: the store folder 0700, its files 0600", async () => {
    const store = nodePath.join(sandbox, "modes")
    const ran = await cli([
      "--simulate",
      "--no-clarify",
      "--store",
      store,
      "--out",
      nodePath.join(sandbox, "m.md"),
      "What is X?"
    ])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.strictEqual(fs.statSync(store).mode & 0o777, 0o700, store)
    const files = fs.readdirSync(store).filter((name) => name.startsWith("deep-research.db"))
    assert.include(files, "deep-research.db")
    for (const file of files) {
      assert.strictEqual(fs.statSync(nodePath.join(store, file)).mode & 0o777, 0o600, file)
    }
  })
})

describe("an OpenAI-compatible server and no model named", () => {
  let scope: Scope.CloseableScope
  let emulator: Emulator.Handle

  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    emulator = await Effect.runPromise(Scope.extend(Emulator.start(), scope))
    await Effect.runPromise(Emulator.simulate(emulator))
  })

  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  const server = () => ({
    OPENAI_API_KEY: "sk-local",
    OPENAI_BASE_URL: emulator.baseUrl("openai"),
    TAVILY_BASE_URL: emulator.baseUrl("tavily")
  })

  it("the one model the server serves is used, and said", async () => {
    const store = nodePath.join(sandbox, "server-model")
    const ran = await cliAsync(
      ["--no-clarify", "--store", store, "--out", nodePath.join(store, "r.md"), "What is X?"],
      server()
    )
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.include(ran.stderr, "Using simulated-model, the one model the server at")
  })

  it("several models: a usage error that names them and what to type", async () => {
    await Effect.runPromise(
      emulator.enqueue("openai.models", Emulator.json({ object: "list", data: [{ id: "qwen3" }, { id: "llama3" }] }))
    )
    const ran = await cliAsync(["--no-clarify", "--store", nodePath.join(sandbox, "several"), "What is X?"], server())
    assert.strictEqual(ran.code, 2)
    assert.match(ran.stderr, /serves 2 models \(qwen3, llama3\): name the model to use with --model openai:<name>/)
    assert.notInclude(ran.stderr, "No language model is configured")
    assert.notMatch(ran.stderr, stackTrace)
  })
})
