/**
 * `deep-research "<question>"` in this process, simulated: where the report goes when `--out` names a folder not made
 * yet, what is said when the report's file cannot be written after the research has succeeded, and the marks of a
 * simulated run on a cluster client's summary.
 */
import { SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as PgDatabase from "../../providers/test/support/pgDatabase.js"
import { reportFile } from "../src/internal/terminal/reportSummary.js"
import { cli, describeRan, tempDir } from "./support/inProcess.js"
import { storedFiles } from "./support/storedSession.js"

const simulated = (dir: string) => [
  "--simulate",
  "--no-clarify",
  "--max-rounds",
  "1",
  "--store",
  nodePath.join(dir, "store")
]

describe("deep-research run --out", () => {
  it("takes a new path without an extension for a folder, and one with an extension for the report's file", () => {
    const dir = tempDir()
    const id = "dr-20260101-000000-abcdef"
    assert.strictEqual(
      reportFile(nodePath.join(dir, "new", "sub"), id),
      nodePath.join(dir, "new", "sub", `deep-research-${id}.md`)
    )
    assert.strictEqual(reportFile(nodePath.join(dir, "new", "notes.md"), id), nodePath.join(dir, "new", "notes.md"))
    fs.writeFileSync(nodePath.join(dir, "NOTES"), "")
    assert.strictEqual(reportFile(nodePath.join(dir, "NOTES"), id), nodePath.join(dir, "NOTES"))
  })

  it("makes the folders --out names, and writes the report there", async () => {
    const dir = tempDir()
    const ran = await cli([
      "run",
      "What is X?",
      ...simulated(dir),
      "--out",
      nodePath.join(dir, "reports", "2026") + "/"
    ])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    const written = fs.readdirSync(nodePath.join(dir, "reports", "2026"))
    assert.strictEqual(written.length, 1, describeRan(ran))
    assert.match(written[0] ?? "", /^deep-research-dr-.*\.md$/)
    assert.include(ran.stdout, `Report: ${nodePath.join(dir, "reports", "2026", written[0] ?? "")}`)
  })

  it("a report its file cannot take is a warning naming where it is kept, and the run succeeds", async () => {
    const dir = tempDir()
    fs.writeFileSync(nodePath.join(dir, "a-file"), "")
    const ran = await cli(["run", "What is X?", ...simulated(dir), "--out", nodePath.join(dir, "a-file", "report.md")])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    const id = /Session: (dr-\S+)/.exec(ran.stdout)?.[1] ?? ""
    const kept = `${nodePath.join(dir, "store", "deep-research.db")} (deep-research show ${id})`
    assert.include(
      ran.stderr,
      `warning: the report could not be written to ${nodePath.join(dir, "a-file", "report.md")}`
    )
    assert.include(ran.stderr, `its report is kept in the session's store, ${kept}`)
    assert.include(ran.stdout, `Report: ${kept}`)
    assert.include(storedFiles(nodePath.join(dir, "store"), id)["report.md"], "Simulated run")
  })
})

describe("a cluster client", () => {
  it.scopedLive(
    "marks the summary of a session a simulated worker ran, as a local simulated run marks its own",
    () =>
      Effect.gen(function* () {
        const database = yield* PgDatabase.make
        // A session as a simulated worker stores it: its report opens with the simulated banner.
        const dir = tempDir()
        const made = yield* Effect.promise(() => cli(["run", "How do tides work?", ...simulated(dir), "--out", dir]))
        assert.strictEqual(made.code, 0, describeRan(made))
        const id = /Session: (dr-\S+)/.exec(made.stdout)?.[1] ?? ""
        const session = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.load(id)).pipe(
          Effect.provide(SqlSessionStore.layerSqlite(nodePath.join(dir, "store", "deep-research.db")))
        )
        yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.save(session)).pipe(
          Effect.provide(SqlSessionStore.layerPostgres(Redacted.make(database.url)))
        )
        // Followed (here: its report written again) by a client that was not told it was simulated.
        const out = nodePath.join(dir, "again.md")
        const ran = yield* Effect.promise(() => cli(["resume", id, "--database", database.url, "--out", out]))
        assert.strictEqual(ran.code, 0, describeRan(ran))
        assert.include(ran.stdout.split("\n"), `[simulated] Report: ${out}`)
        assert.include(ran.stdout, "(simulated: no real model or web was used)")
      }),
    60_000
  )
})
