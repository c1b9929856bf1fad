/**
 * `deep-research import`: another store's sessions brought into this store (how a store moves to PostgreSQL; the
 * PostgreSQL side is the store's own test, `DatabaseImport.test.ts`): a session researched in one store is listed and
 * shown, report and all, from the other; a second import brings nothing twice; a path that is no store's database is
 * refused with exit 1 and why.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { run } from "./support/inProcess.js"

let sandbox: string
let id: string

const cli = (args: ReadonlyArray<string>) => run(args, { cwd: sandbox, env: { HOME: nodePath.join(sandbox, "home") } })

beforeAll(async () => {
  sandbox = fs.mkdtempSync(nodePath.join(os.tmpdir(), "import-cli-"))
  const ran = await cli([
    "--simulate",
    "--no-clarify",
    "--store",
    nodePath.join(sandbox, "laptop"),
    "--out",
    nodePath.join(sandbox, "r.md"),
    "How do ocean tides work?"
  ])
  assert.strictEqual(ran.code, 0, ran.stderr)
  const listed = await cli(["list", "--store", nodePath.join(sandbox, "laptop"), "--json"])
  id = JSON.parse(listed.stdout.trim().split("\n")[0] ?? "{}").id
})

afterAll(() => fs.rmSync(sandbox, { recursive: true, force: true }))

describe("deep-research import", () => {
  it("brings another store's sessions in whole, once", async () => {
    const into = nodePath.join(sandbox, "desktop")
    const first = await cli(["import", nodePath.join(sandbox, "laptop"), "--store", into])
    assert.strictEqual(first.code, 0, first.stderr)
    assert.strictEqual(first.stdout.trim(), `Imported 1 session(s) into ${nodePath.join(into, "deep-research.db")}.`)
    const listed = await cli(["list", "--store", into])
    assert.include(listed.stdout, id)
    const shown = await cli(["show", id, "--store", into])
    assert.strictEqual(shown.code, 0, shown.stderr)
    assert.include(shown.stdout, fs.readFileSync(nodePath.join(sandbox, "r.md"), "utf8").split("\n")[0] ?? "")

    const again = await cli(["import", nodePath.join(sandbox, "laptop", "deep-research.db"), "--store", into, "--json"])
    assert.strictEqual(again.code, 0, again.stderr)
    assert.deepStrictEqual(JSON.parse(again.stdout), { imported: 0, present: 1, unreadable: [], unfinished: [] })
  })

  it("refuses a path that is no store's database, with exit 1 and why", async () => {
    const missing = nodePath.join(sandbox, "nowhere")
    const ran = await cli(["import", missing, "--store", nodePath.join(sandbox, "desktop")])
    assert.strictEqual(ran.code, 1)
    assert.include(ran.stderr, `cannot import the sessions of ${missing}: no such file`)
    assert.isFalse(fs.existsSync(missing))
  })
})
