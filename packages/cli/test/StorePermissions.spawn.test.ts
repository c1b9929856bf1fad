/**
 * A store the system will not let the user read or write, through the built CLI run as a user without privileges
 * (root reads and writes through any permission, so as root the CLI is run as `nobody` through util-linux's
 * `setpriv`): an unreadable session is listed as unreadable among the rest, and a read-only session folder or store
 * is one line naming the path and the reason, exit 2, nothing on stdout, no stack trace. A write the system refuses
 * once a run holds its session stops the run with exit 1, naming the path and the reason, the session kept resumable.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import { execFile, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../..", import.meta.url))
const bin = nodePath.join(root, "packages/cli/bin/deep-research.js")
const nobody = 65534
const asRoot = process.getuid?.() === 0

let sandbox: string
const store = () => nodePath.join(sandbox, "store")
const sessionsDir = () => nodePath.join(store(), "sessions")

const Listed = Schema.Struct({ id: Schema.String, status: Schema.String })

interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the built CLI as a user the permissions apply to. */
const cli = (args: ReadonlyArray<string>, unprivileged = true): Promise<Ran> => {
  const env = {
    PATH: process.env["PATH"] ?? "",
    HOME: nodePath.join(sandbox, "home"),
    DEEP_RESEARCH_HOME: store(),
    NO_COLOR: "1"
  }
  const [command, prefix] =
    unprivileged && asRoot
      ? ["setpriv", ["--reuid", String(nobody), "--regid", String(nobody), "--clear-groups", process.execPath]]
      : [process.execPath, []]
  return new Promise((resolve, reject) => {
    const child = execFile(command, [...prefix, bin, ...args], { cwd: sandbox, env }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== "number") reject(new Error(`cannot run ${command}: ${error.message}`))
      else resolve({ code: child.exitCode, stdout, stderr })
    })
  })
}

/** One error line on stderr (beside the notices a simulated run prints) that names the path and says why. */
const refusedClearly = (ran: Ran, path: string) => {
  assert.strictEqual(ran.code, 2, ran.stderr)
  assert.strictEqual(ran.stdout, "")
  const errors = ran.stderr.split("\n").filter((line) => line.startsWith("error:"))
  assert.strictEqual(errors.length, 1, ran.stderr)
  assert.include(errors[0], path)
  assert.match(errors[0] ?? "", /permission denied/i)
  assert.notMatch(ran.stderr, /\n\s+at /)
}

const sessionIds = () => fs.readdirSync(sessionsDir()).sort()

beforeAll(async () => {
  if (asRoot && spawnSync("setpriv", ["--version"]).error !== undefined) {
    throw new Error("running as root, these tests need util-linux's setpriv to run the CLI without privileges")
  }
  sandbox = fs.mkdtempSync(nodePath.join(os.tmpdir(), "store-permissions-"))
  fs.mkdirSync(nodePath.join(sandbox, "home"))
  for (const question of ["How do tides work?", "How do heat pumps work?"]) {
    const ran = await cli(["--simulate", "--no-clarify", "--out", nodePath.join(sandbox, "report.md"), question], false)
    assert.strictEqual(ran.code, 0, ran.stderr)
  }
  // Everything belongs to the user the CLI runs as.
  if (asRoot) spawnSync("chown", ["-R", `${nobody}:${nobody}`, sandbox])
}, 300_000)

afterAll(() => {
  if (sandbox === undefined) return
  spawnSync("chmod", ["-R", "u+rwx", sandbox])
  fs.rmSync(sandbox, { recursive: true, force: true })
})

describe("a store the system refuses", () => {
  it("lists an unreadable session as unreadable, and the others as they are", async () => {
    const [hidden = "", other = ""] = sessionIds()
    fs.chmodSync(nodePath.join(sessionsDir(), hidden), 0o000)
    try {
      const ran = await cli(["list"])
      assert.strictEqual(ran.code, 0, ran.stderr)
      assert.match(ran.stdout, new RegExp(`${hidden}\\s+unreadable`))
      assert.match(ran.stdout, new RegExp(`${other}\\s+completed`))
      const json = await cli(["list", "--json"])
      assert.strictEqual(json.code, 0, json.stderr)
      // A JSON object a line.
      const listed = json.stdout
        .trim()
        .split("\n")
        .map((line) => Schema.decodeUnknownSync(Listed)(JSON.parse(line)))
      const statuses = Object.fromEntries(listed.map((entry) => [entry.id, entry.status]))
      assert.deepStrictEqual(statuses, { [hidden]: "unreadable", [other]: "completed" })
    } finally {
      fs.chmodSync(nodePath.join(sessionsDir(), hidden), 0o700)
    }
  })

  it("a session file the system will not let it read is unreadable, not corrupt, and is left as it is", async () => {
    const [id = ""] = sessionIds()
    const file = nodePath.join(sessionsDir(), id, "session.json")
    fs.chmodSync(file, 0o000)
    try {
      assert.match((await cli(["list"])).stdout, new RegExp(`${id}\\s+unreadable`))
      const shown = await cli(["show", id])
      assert.strictEqual(shown.code, 2, shown.stderr)
      assert.notInclude(shown.stderr, "corrupt")
      assert.include(shown.stderr, `cannot read ${file}: permission denied`)
      assert.deepStrictEqual(
        fs.readdirSync(nodePath.dirname(file)).filter((name) => name.includes("corrupt")),
        [],
        "nothing was moved aside"
      )
    } finally {
      fs.chmodSync(file, 0o600)
    }
  })

  it("refuses to delete or resume in a read-only session folder with one line and exit 2", async () => {
    const [id = ""] = sessionIds()
    const folder = nodePath.join(sessionsDir(), id)
    fs.chmodSync(folder, 0o500)
    try {
      refusedClearly(await cli(["delete", id]), folder)
      refusedClearly(await cli(["resume", id]), folder)
      assert.isTrue(fs.existsSync(nodePath.join(folder, "session.json")), "the session is still there")
    } finally {
      fs.chmodSync(folder, 0o700)
    }
  })

  it("refuses a run in a read-only store with one line and exit 2", async () => {
    fs.chmodSync(sessionsDir(), 0o500)
    try {
      const ran = await cli(["--no-clarify", "--simulate", "--json", "How do magnets work?"])
      refusedClearly(ran, sessionsDir())
      assert.lengthOf(sessionIds(), 2)
    } finally {
      fs.chmodSync(sessionsDir(), 0o700)
    }
  })

  it("stops a run whose session's log the system will not let it write with exit 1, the session resumable", async () => {
    const [source = ""] = sessionIds()
    const id = "dr-20260101-000000-stoppd"
    const folder = nodePath.join(sessionsDir(), id)
    // A session stopped before its research, as a cancel leaves one: its question and settings, nothing found yet.
    const stopped = JSON.parse(fs.readFileSync(nodePath.join(sessionsDir(), source, "session.json"), "utf8"))
    for (const field of ["report", "brief", "clarification", "supervisionStopReason", "error"]) delete stopped[field]
    Object.assign(stopped, { id, status: "cancelled", rounds: [], sources: [], metrics: [], usage: [] })
    stopped.phasesCompleted = []
    fs.mkdirSync(folder, { mode: 0o700 })
    fs.writeFileSync(nodePath.join(folder, "session.json"), JSON.stringify(stopped))
    fs.writeFileSync(nodePath.join(folder, "simulated.json"), '{"simulated": true}\n')
    const log = nodePath.join(folder, "events.jsonl")
    fs.writeFileSync(log, "", { mode: 0o644 })
    if (asRoot) spawnSync("chown", ["-R", `${nobody}:${nobody}`, folder])
    // The log is the system's to refuse: owned by root (as root) or read-only (as anyone else).
    if (asRoot) spawnSync("chown", ["0:0", log])
    else fs.chmodSync(log, 0o444)
    const ran = await cli(["resume", id, "--simulate", "--no-clarify", "--out", nodePath.join(sandbox, "stopped.md")])
    assert.strictEqual(ran.code, 1, ran.stderr)
    assert.include(ran.stderr, `Research stopped: FileSessionStore: cannot append to ${log}: permission denied`)
    assert.include(ran.stderr, `deep-research resume ${id}`)
    assert.notMatch(ran.stderr, /\n\s+at /)
    const kept = JSON.parse(fs.readFileSync(nodePath.join(folder, "session.json"), "utf8"))
    assert.oneOf(kept.status, ["cancelled", "failed", "running"], "kept as of its last checkpoint, resumable")

    if (asRoot) spawnSync("chown", [`${nobody}:${nobody}`, log])
    else fs.chmodSync(log, 0o644)
    const resumed = await cli([
      "resume",
      id,
      "--simulate",
      "--no-clarify",
      "--out",
      nodePath.join(sandbox, "stopped.md")
    ])
    assert.strictEqual(resumed.code, 0, resumed.stderr)
    assert.strictEqual(JSON.parse(fs.readFileSync(nodePath.join(folder, "session.json"), "utf8")).status, "completed")
  })
})
