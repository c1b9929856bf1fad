/**
 * Whether the bin may run `list`, `show` and `delete` from their quick entry built into one file
 * (`dist/quick/storeCommands.js`, made by `quick/build.mjs` after `tsc -b`): only while that file is newer than every
 * module of the project it was built from (`inputs.json` beside it), so that a `tsc -b` after a change never leaves the
 * command running the code from before it. Loaded by the bin before anything else, so it imports only Node's modules.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"

/** The bundle's file name in its folder. */
export const bundleName = "storeCommands.js"

/** The list of modules it was built from, beside it. */
export const inputsName = "inputs.json"

/**
 * The path of the bundled quick entry in `folder` when it is there and no module it was built from is newer; undefined
 * otherwise (no bundle, no list of its modules, or a module changed since). A module that is not there is not counted:
 * an install may put the project's packages elsewhere, and in the workspace a removed module's importers changed too.
 */
export const freshBundle = (folder: string): string | undefined => {
  try {
    const bundle = nodePath.join(folder, bundleName)
    const built = fs.statSync(bundle, { throwIfNoEntry: false })?.mtimeMs
    if (built === undefined) return undefined
    const inputs: unknown = JSON.parse(fs.readFileSync(nodePath.join(folder, inputsName), "utf8"))
    if (!Array.isArray(inputs)) return undefined
    for (const input of inputs) {
      if (typeof input !== "string") return undefined
      const changed = fs.statSync(nodePath.resolve(folder, input), { throwIfNoEntry: false })?.mtimeMs
      if (changed !== undefined && changed > built) return undefined
    }
    return bundle
  } catch {
    // A list that cannot be read, a folder that cannot be searched: the modules themselves are run.
    return undefined
  }
}
