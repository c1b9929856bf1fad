/**
 * What the CLI and the server say where a new user reads it: the session list's header and its marks of simulated
 * sessions, the notice of a session resumed simulated, the corpus's skipped files by name, the corpus types `--help`
 * names, and a 400's issues without the ones that say nothing. The commands run in this process.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { post, served } from "./ServeHarness.js"
import { cli, describeRan, tempDir } from "./support/inProcess.js"

const quick = ["--simulate", "--no-clarify", "--max-rounds", "1"]

describe("what a new user reads", () => {
  it("list has a header row and marks the sessions a simulated run made; resume says it goes on simulated", async () => {
    const dir = tempDir()
    const store = ["--store", nodePath.join(dir, "store")]
    const made = await cli(["run", "How do tides work?", ...quick, ...store, "--out", nodePath.join(dir, "r.md")])
    assert.strictEqual(made.code, 0, describeRan(made))
    const id = /Session: (dr-\S+)/.exec(made.stdout)?.[1] ?? ""
    const listed = await cli(["list", ...store])
    assert.strictEqual(listed.code, 0, describeRan(listed))
    const [header, line] = listed.stdout.trimEnd().split("\n")
    assert.match(header ?? "", /^ID\s+STATUS\s+CREATED \(UTC\)\s+COST\s+QUESTION$/)
    assert.match(
      line ?? "",
      new RegExp(`^${id}\\s+completed\\s+.*\\$0\\.0000\\s+\\[simulated\\] How do tides work\\?$`)
    )
    const json = await cli(["list", "--json", ...store])
    assert.deepInclude(JSON.parse(json.stdout.trim()), { id, simulated: true })
    const resumed = await cli(["resume", id, ...store, "--out", nodePath.join(dir, "again.md")])
    assert.strictEqual(resumed.code, 0, describeRan(resumed))
    assert.include(
      resumed.stderr,
      `[simulated] Session ${id} was made by a simulated run: it is resumed against the built-in emulator too, with ` +
        "no real model or web."
    )
  })

  it("the corpus summary names each file it skipped, and why", async () => {
    const dir = tempDir()
    const corpus = nodePath.join(dir, "notes")
    fs.mkdirSync(corpus)
    fs.writeFileSync(nodePath.join(corpus, "tides.md"), "# Tides\n\nThe Moon's pull raises the tides twice a day.\n")
    fs.writeFileSync(nodePath.join(corpus, "empty.txt"), "")
    fs.writeFileSync(nodePath.join(corpus, "photo.jpg"), Buffer.from([0xff, 0xd8, 0xff, 0x00, 0x10, 0x4a, 0x46]))
    const ran = await cli([
      "run",
      "How do tides work?",
      ...quick,
      "--corpus",
      corpus,
      "--store",
      nodePath.join(dir, "store"),
      "--out",
      nodePath.join(dir, "r.md")
    ])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    assert.include(ran.stderr, `corpus ${corpus}: 1 files indexed`, "the readable file is indexed")
    assert.include(ran.stderr, "2 skipped: ")
    assert.include(ran.stderr, "empty.txt (empty)")
    assert.include(ran.stderr, "photo.jpg (binary content, not text)")
  })

  it("--help says the corpus takes any text file, not only some extensions", async () => {
    const help = await cli(["run", "--help"])
    assert.include(help.stdout, "any text file, and HTML and PDF")
    assert.notInclude(help.stdout, ".md, .txt, .html, .pdf")
  })

  it.scopedLive("a 400's issues are the ones that say what is wrong, none that says nothing", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const response = yield* post(`${s.url}/api/sessions`, { question: "", maxRounds: "two" })
      assert.strictEqual(response.status, 400)
      const body = JSON.parse(response.text)
      assert.deepStrictEqual(
        body.issues.map((issue: { path: Array<string>; message: string }) => [issue.path.join("."), issue.message]),
        [
          ["question", "must not be empty"],
          ["maxRounds", `Expected number, actual "two"`]
        ]
      )
    })
  )
})
