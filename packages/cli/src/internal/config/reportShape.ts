/**
 * The report's shape (`--words`, `--outline`, `--instructions`, or the config file's `words`, `outline`,
 * `instructions`) as the research configuration takes it: each from its flag, else the config file (`docs/reports.md`).
 * An outline given as a file is read before the configuration is resolved (`readOutlineFile`).
 */
import { ReportShape } from "@deep-research/core"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Path from "node:path"

/** The shape's flags, as the command line gives them. */
interface Flags {
  readonly words?: string | undefined
  readonly outline?: string | undefined
  readonly instructions?: string | undefined
}

/** The shape's keys of the config file. */
interface FileConfig {
  readonly words?: number | string | undefined
  readonly outline?: string | ReadonlyArray<string> | undefined
  readonly instructions?: string | undefined
}

const sizes = Object.entries(ReportShape.namedSizes)
  .map(([name, words]) => `${name} (${words})`)
  .join(", ")

const wordsOf = (given: number | string, where: string): Either.Either<number, string> => {
  const words = typeof given === "number" ? given : ReportShape.parseWords(given)
  return words === undefined
    ? Either.left(`${where} takes a number of words or a named size: ${sizes}; got "${given}"`)
    : Either.right(words)
}

/** The report's length, outline and instructions by the names the settings use; a bad length is said in words. */
export const shapeOf = (flags: Flags, file: FileConfig | undefined): Either.Either<Record<string, unknown>, string> =>
  Either.gen(function* () {
    const shape: Record<string, unknown> = {}
    if (flags.words !== undefined) shape["reportWords"] = yield* wordsOf(flags.words, "--words")
    else if (file?.words !== undefined) shape["reportWords"] = yield* wordsOf(file.words, `the config file's "words"`)
    const outline =
      flags.outline !== undefined
        ? ReportShape.parseOutline(flags.outline)
        : typeof file?.outline === "string"
          ? ReportShape.parseOutline(file.outline)
          : file?.outline
    if (outline !== undefined) shape["reportOutline"] = outline
    const instructions = flags.instructions ?? file?.instructions
    if (instructions !== undefined && instructions.trim() !== "") shape["reportInstructions"] = instructions.trim()
    return shape
  })

/** Whether an `--outline` value names a file rather than giving titles. */
const namesFile = (value: string): boolean =>
  !value.includes(";") &&
  !value.includes("\n") &&
  (/\.(md|markdown|txt)$/i.test(value) || /^(\.{0,2}\/|~\/)/.test(value))

/**
 * An `--outline` naming a file (no `;`, and a path or a `.md`/`.txt` name, or any file that exists) read as its titles
 * (one a line; Markdown headings and list items read as their titles); a file named that does not exist is an error.
 */
export const readOutlineFile = (value: string | undefined) =>
  Effect.gen(function* () {
    if (value === undefined || value.includes(";") || value.includes("\n")) return Either.right(value)
    const fs = yield* FileSystem.FileSystem
    const path = value.startsWith("~/") ? Path.join(process.env["HOME"] ?? "", value.slice(2)) : value
    const exists = yield* fs.exists(path).pipe(Effect.orElseSucceed(() => false))
    if (!exists) return namesFile(value) ? Either.left(`--outline: no file at ${value}`) : Either.right(value)
    return yield* fs.readFileString(path).pipe(
      Effect.map((text) => Either.right<string | undefined>(text.includes("\n") ? text : `${text}\n`)),
      Effect.catchAll((error) => Effect.succeed(Either.left(`--outline: cannot read ${value}: ${error.message}`)))
    )
  })
