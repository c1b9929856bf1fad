/** The session store contract, against the file store in a fresh folder per test. */
import { FileSessionStore } from "@deep-research/providers"
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as nodePath from "node:path"
import { contract } from "../../support/sessionStoreContract.js"

const NodeLayer = Layer.merge(NodeFileSystem.layer, NodePath.layer)

contract(
  "files",
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const directory = yield* fs.makeTempDirectoryScoped({ prefix: "deep-research-contract-" })
    const open = FileSessionStore.make({ directory })
    return {
      store: yield* open,
      reopen: open.pipe(Effect.provide(NodeLayer)),
      corrupt: (id: string) =>
        Effect.orDie(fs.writeFileString(nodePath.join(directory, id, "session.json"), '{"version": 2, "id": "')),
      corruptKept: (id: string) =>
        Effect.orDie(
          Effect.map(fs.readDirectory(nodePath.join(directory, id)), (names) =>
            names.filter((name) => name.startsWith("session.json.corrupt-"))
          )
        )
    }
  }).pipe(Effect.provide(NodeLayer), Effect.orDie),
  { corruptible: true }
)
