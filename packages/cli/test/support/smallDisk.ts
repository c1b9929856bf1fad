/**
 * A small file system of its own for a test: a tmpfs of a given size mounted on a temporary folder, so that a disk
 * that fills up is a real one (the kernel's `ENOSPC`, SQLite's `SQLITE_FULL`). Mounting needs root, which `.ci/run`
 * has; elsewhere `mount` refuses, and the tests that need it say so and stop there.
 */
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"

/** A mounted tmpfs of `size` (as `mount` takes it: `2m`), unmounted when the scope closes; `undefined` when it cannot be. */
export const mounted = (size: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const folder = fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-small-disk-"))
      try {
        execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", folder], { stdio: "ignore" })
        return folder
      } catch {
        fs.rmSync(folder, { recursive: true, force: true })
        return undefined
      }
    }),
    (folder) =>
      Effect.sync(() => {
        if (folder === undefined) return
        try {
          execFileSync("umount", ["-l", folder], { stdio: "ignore" })
        } catch {
          // Left mounted: the folder is removed with the machine's temporary files.
        }
        fs.rmSync(folder, { recursive: true, force: true })
      })
  )

/**
 * Fills what is left of the file system at `folder` with one file, but for `leave` bytes; returns a way to free it
 * again.
 */
export const fill = (folder: string, leave = 0) => {
  const file = nodePath.join(folder, "filler")
  const chunk = Buffer.alloc(64 * 1024, 1)
  const fd = fs.openSync(file, "w")
  try {
    for (;;) fs.writeSync(fd, chunk)
  } catch {
    // ENOSPC: full.
  } finally {
    fs.closeSync(fd)
  }
  if (leave > 0) fs.truncateSync(file, Math.max(0, fs.statSync(file).size - leave))
  return () => fs.rmSync(file, { force: true })
}

/** Why a test that needs a small disk stops: said once, in its output. */
export const unavailable = "cannot mount a tmpfs here (needs root): .ci/run runs this test as root"
