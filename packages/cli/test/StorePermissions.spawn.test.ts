/**
 * A session database the system will not let the user read or write, through the built CLI run as a user without
 * privileges (root reads and writes through any permission, so as root the CLI is run as `nobody` through
 * util-linux's `setpriv`): every command is one line naming the database file and the reason, exit 2, nothing on
 * stdout, no stack trace; and the sessions are all there once the permission is given back.
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
const databaseFile = () => nodePath.join(store(), "deep-research.db")

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

const listedIds = async () => {
  const listed = await cli(["list", "--json"])
  assert.strictEqual(listed.code, 0, listed.stderr)
  return listed.stdout
    .trim()
    .split("\n")
    .map((line) => Schema.decodeUnknownSync(Listed)(JSON.parse(line)).id)
}

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

describe("a session database the system refuses", () => {
  it("one it cannot read: list, show and a run are one line naming the file and why, exit 2", async () => {
    const ids = await listedIds()
    assert.lengthOf(ids, 2)
    fs.chmodSync(databaseFile(), 0o000)
    try {
      refusedClearly(await cli(["list"]), databaseFile())
      refusedClearly(await cli(["show", ids[0] ?? ""]), databaseFile())
      refusedClearly(await cli(["--no-clarify", "--simulate", "How do magnets work?"]), databaseFile())
    } finally {
      fs.chmodSync(databaseFile(), 0o600)
    }
    assert.deepStrictEqual((await listedIds()).sort(), [...ids].sort(), "nothing was lost")
  }, 120_000)

  it("a store folder it cannot write: a run is one line naming the file and why, exit 2, and nothing is lost", async () => {
    const ids = await listedIds()
    fs.chmodSync(databaseFile(), 0o400)
    fs.chmodSync(store(), 0o500)
    try {
      refusedClearly(await cli(["--no-clarify", "--simulate", "How do magnets work?"]), databaseFile())
      refusedClearly(await cli(["delete", ids[0] ?? ""]), databaseFile())
    } finally {
      fs.chmodSync(store(), 0o700)
      fs.chmodSync(databaseFile(), 0o600)
    }
    assert.deepStrictEqual((await listedIds()).sort(), [...ids].sort(), "nothing was lost")
  }, 120_000)
})
