/**
 * A store that fails under a run (a full disk) as the CLI ends it: SQLite's failure on a real file system that has
 * filled up (a small tmpfs, `support/smallDisk.ts`) becomes exit 1 naming the database's reason, and the session's last
 * committed checkpoint is still there to resume from once there is room. (`StoreDurability.spawn.test.ts` does the
 * same to a running `serve`.)
 */
import { ResearchConfig, Session, SessionStore } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as nodePath from "node:path"
import { stoppedRun } from "../src/internal/commandLine/failures.js"
import * as SmallDisk from "./support/smallDisk.js"

const sessionOf = (status: Session.Status, query = "How do tides work?") =>
  new Session.Session({
    version: Session.currentVersion,
    id: "dr-20260101-000000-fulldk",
    query,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    config: ResearchConfig.defaults,
    status,
    rounds: [],
    sources: [],
    metrics: [],
    usage: []
  })

describe("a store that fails under a run", () => {
  it.scopedLive("a full disk stops the run with exit 1, saying why; the last committed checkpoint stays", () =>
    Effect.gen(function* () {
      const disk = yield* SmallDisk.mounted("1m")
      if (disk === undefined) return yield* Effect.logWarning(SmallDisk.unavailable)
      const file = nodePath.join(disk, "deep-research.db")
      const context = yield* Layer.build(SqlSessionStore.layerSqlite(file))
      const store = Context.get(context, SessionStore.SessionStore)
      yield* store.save(sessionOf("queued"))
      const free = SmallDisk.fill(disk)
      // A checkpoint larger than any page SQLite kept free.
      const exit = yield* Effect.exit(store.save(sessionOf("running", "x".repeat(200_000))))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isSuccess(exit)) return
      const ended = stoppedRun(exit.cause, { kept: file, resume: "deep-research resume dr-20260101-000000-fulldk" })
      assert.strictEqual(ended.code, 1)
      assert.include(ended.message, "cannot save session dr-20260101-000000-fulldk")
      assert.match(ended.message, /full/)
      assert.include(ended.message, "resume it with: deep-research resume dr-20260101-000000-fulldk")
      free()
      assert.strictEqual((yield* store.load("dr-20260101-000000-fulldk")).status, "queued")
    })
  )
})
