/**
 * `export`: a stored session's report as Markdown, HTML, PDF, DOCX or JSON (`export/ReportExport`), to standard output
 * or a file; `--json-schema` prints the JSON export's schema. A format it does not know, a session it does not have
 * and a report it cannot render are usage errors (exit 2), each said in one sentence.
 */
import { Args, Command } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as ReportExport from "../export/ReportExport.js"
import { Exited, usageError } from "../internal/commandLine/exited.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import { sessionIdArg, withStore } from "./store.js"

const options = ParserOptions.optionsOf(OptionTable.commands.export)

/** Where an export goes: standard output, or a file (a folder gets the default name inside it). */
const destination = (id: string, format: ReportExport.Format, out: Option.Option<string>): string | undefined => {
  const given = Option.getOrUndefined(out)
  if (given === "-") return undefined
  if (given === undefined) return ReportExport.isText(format) ? undefined : ReportExport.filenameOf(id, format)
  const isFolder = fs.existsSync(given) && fs.statSync(given).isDirectory()
  return isFolder ? nodePath.join(given, ReportExport.filenameOf(id, format)) : given
}

const write = (body: Uint8Array, path: string | undefined) =>
  path === undefined
    ? Effect.async<void>((resume) => {
        process.stdout.write(Buffer.from(body.buffer, body.byteOffset, body.byteLength), () => resume(Effect.void))
      })
    : Effect.try({
        try: () => fs.writeFileSync(path, body),
        catch: (error) =>
          usageError(`error: cannot write ${path}: ${error instanceof Error ? error.message : String(error)}`)
      }).pipe(Effect.zipRight(Effect.sync(() => process.stderr.write(`Wrote ${path}\n`))))

/** `export`: the report of a stored session in a format to hand on. */
export const exportCommand = Command.make(
  "export",
  { id: Args.optional(sessionIdArg), ...options },
  ({ id, format, out, jsonSchema, ...where }) =>
    Effect.gen(function* () {
      if (jsonSchema) return yield* Console.log(ReportExport.jsonSchema().trimEnd())
      const sessionId = Option.getOrUndefined(id)
      if (sessionId === undefined) {
        return yield* usageError("error: export needs a session id (see `deep-research list`), or --json-schema.")
      }
      const name = Option.getOrElse(format, () => "md")
      if (!ReportExport.isFormat(name)) {
        return yield* usageError(
          `error: ${JSON.stringify(name)} is not an export format; use one of ${ReportExport.formats.join(", ")}.`
        )
      }
      const exported = yield* withStore(where, (sessions) =>
        sessions.load(sessionId).pipe(
          // A session that cannot be read is a failure (1), as `show` says it; a missing or malformed id is usage (2).
          Effect.mapError(
            (error) =>
              new Exited({ code: error._tag === "ResearchSessionCorrupt" ? 1 : 2, message: `error: ${error.message}` })
          ),
          Effect.flatMap((session) => ReportExport.render(session, name)),
          Effect.mapError((error) => (error instanceof Exited ? error : usageError(`error: ${error.message}`)))
        )
      )
      yield* write(exported.body, destination(sessionId, name, out))
    })
).pipe(
  Command.withDescription(
    "Write a session's report as md, html, pdf, docx or json, citations linked and the citation check kept " +
      "(--json-schema: the json export's schema)"
  )
)
