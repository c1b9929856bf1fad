/**
 * A store that fails under a run (a full disk) as the CLI ends it: the file store's failure, on a file system that
 * answers every write with ENOSPC once the disk is full, becomes exit 1 naming the file and the cause in plain words,
 * and the session's last checkpoint is still there to resume from. (`StorePermissions.test.ts` runs the built CLI into
 * a write the system refuses.)
 */
import { ResearchConfig, Session } from "@deep-research/core"
import { FileSessionStore } from "@deep-research/providers"
import { SystemError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { stoppedRun } from "../src/internal/commandLine/failures.js"

const platform = Layer.merge(NodeFileSystem.layer, NodePath.layer)

const sessionOf = (status: Session.Status) =>
  new Session.Session({
    version: Session.currentVersion,
    id: "dr-20260101-000000-fulldk",
    query: "How do tides work?",
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
  it.scopedLive("a full disk stops the run with exit 1, naming the file and the cause; the last checkpoint stays", () =>
    Effect.gen(function* () {
      const files = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const directory = yield* files.makeTempDirectoryScoped({ prefix: "deep-research-full-" })
      let full = false
      // Node's file system, but once the disk is full no file opens for writing.
      const filling: FileSystem.FileSystem = {
        ...files,
        open: (file, options) =>
          full && /[wa]/.test(options?.flag ?? "r")
            ? Effect.fail(
                new SystemError({
                  reason: "Unknown",
                  module: "FileSystem",
                  method: "open",
                  pathOrDescriptor: file,
                  description: `ENOSPC: no space left on device, open '${file}'`
                })
              )
            : files.open(file, options)
      }
      const store = yield* FileSessionStore.make({ directory }).pipe(
        Effect.provideService(FileSystem.FileSystem, filling)
      )
      yield* store.save(sessionOf("queued"))
      full = true
      const exit = yield* Effect.exit(store.save(sessionOf("running")))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isSuccess(exit)) return
      const file = path.join(directory, "dr-20260101-000000-fulldk", "session.json")
      const kept = path.join(directory, "dr-20260101-000000-fulldk")
      const ended = stoppedRun(exit.cause, { kept, resume: "deep-research resume dr-20260101-000000-fulldk" })
      assert.strictEqual(ended.code, 1)
      assert.include(ended.message, `cannot write ${file}: no space left on the device`)
      assert.include(ended.message, `kept at ${kept}`)
      assert.include(ended.message, "resume it with: deep-research resume dr-20260101-000000-fulldk")
      full = false
      assert.strictEqual((yield* store.load("dr-20260101-000000-fulldk")).status, "queued")
    }).pipe(Effect.provide(platform))
  )
})
