import * as Cause from "effect/Cause"
import type * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"

/**
 * An error's message followed by those of its causes (a driver's error under a library's "Failed to execute
 * statement", say), at most four deep.
 */
export const describeError = (error: Error): string => {
  const messages: Array<string> = []
  let current: unknown = error
  while (current instanceof Error && messages.length < 4) {
    if (current.message !== "" && !messages.includes(current.message)) messages.push(current.message)
    current = current.cause
  }
  if (typeof current === "string" && messages.length < 4) messages.push(current)
  return messages.join(": ")
}

/** A logger writing one line per entry: `warn: message: cause`. */
export const lineLogger = (write: (line: string) => void): Logger.Logger<unknown, void> =>
  Logger.make(({ cause, logLevel, message }) => {
    const parts = (Array.isArray(message) ? message : [message]).map((part) =>
      typeof part === "string" ? part : part instanceof Error ? describeError(part) : JSON.stringify(part)
    )
    const squashed = Cause.isEmpty(cause) ? undefined : Cause.squash(cause)
    const reason =
      squashed === undefined ? "" : `: ${squashed instanceof Error ? describeError(squashed) : String(squashed)}`
    write(`${logLevel.label.toLowerCase()}: ${parts.join(": ")}${reason}`)
  })

/** Log lines on stderr, one each. */
export const stderrLines = lineLogger((line) => process.stderr.write(`${line}\n`))

/** Log lines on stderr: stdout stays the command's answer (the report summary, JSON lines, MCP messages). */
export const stderrLogger: Layer.Layer<never> = Logger.replace(Logger.defaultLogger, stderrLines)
