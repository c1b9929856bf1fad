import * as Cause from "effect/Cause"
import type * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"

/** A logger writing one line per entry: `warn: message: cause`. */
export const lineLogger = (write: (line: string) => void): Logger.Logger<unknown, void> =>
  Logger.make(({ cause, logLevel, message }) => {
    const parts = (Array.isArray(message) ? message : [message]).map((part) =>
      typeof part === "string" ? part : part instanceof Error ? part.message : JSON.stringify(part)
    )
    const reason = Cause.isEmpty(cause) ? "" : `: ${String(Cause.squash(cause))}`
    write(`${logLevel.label.toLowerCase()}: ${parts.join(": ")}${reason}`)
  })

/** Log lines on stderr, one each. */
export const stderrLines = lineLogger((line) => process.stderr.write(`${line}\n`))

/** Log lines on stderr: stdout stays the command's answer (the report summary, JSON lines, MCP messages). */
export const stderrLogger: Layer.Layer<never> = Logger.replace(Logger.defaultLogger, stderrLines)
