/**
 * The MCP server's input on stdio, line by line, with what is not a JSON-RPC message answered as JSON-RPC 2.0 asks:
 * a line that is not JSON gets a parse error (-32700), one that is JSON but no JSON-RPC message an invalid request
 * (-32600), each with the request's id when one can be read and `null` otherwise. The SDK's own transport drops such
 * lines without an answer, so a client waiting for one would wait forever. Lines that are messages pass on unchanged;
 * blank lines are left out.
 */
import { ErrorCode, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"
import { Transform, type TransformCallback } from "node:stream"

/** A JSON-RPC error answer. */
export interface Refusal {
  readonly jsonrpc: "2.0"
  readonly id: string | number | null
  readonly error: { readonly code: number; readonly message: string }
}

/** Past this many bytes without a line's end, input passes on unread (the SDK's transport then refuses it). */
const maxLineBytes = 10 * 1024 * 1024

const idOf = (value: unknown): string | number | null => {
  if (typeof value !== "object" || value === null) return null
  const id: unknown = Reflect.get(value, "id")
  return typeof id === "string" || typeof id === "number" ? id : null
}

/** The refusal of one line (not blank), or undefined when it is a JSON-RPC message. */
export const refusalOf = (line: string): Refusal | undefined => {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error)
    return { jsonrpc: "2.0", id: null, error: { code: ErrorCode.ParseError, message: `Parse error: ${why}` } }
  }
  if (JSONRPCMessageSchema.safeParse(value).success) return undefined
  return {
    jsonrpc: "2.0",
    id: idOf(value),
    error: {
      code: ErrorCode.InvalidRequest,
      message: "Invalid Request: not a JSON-RPC 2.0 request, notification or response (one object a line)"
    }
  }
}

/**
 * The lines of `refuse`d input left out: what the stream gives is every whole line that is a message, each with its
 * newline, in order. `refuse` is called, in order too, with the answer to each line left out.
 */
export const validLines = (refuse: (refusal: Refusal) => void): Transform => {
  let pending: Buffer = Buffer.alloc(0)
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      let start = 0
      let end = pending.indexOf(0x0a, start)
      while (end !== -1) {
        const line = pending.subarray(start, end + 1)
        const text = pending.toString("utf8", start, end)
        // A blank line is no message and asks nothing: it is left out without an answer.
        if (text.trim() !== "") {
          const refusal = refusalOf(text.replace(/\r$/, ""))
          if (refusal === undefined) this.push(line)
          else refuse(refusal)
        }
        start = end + 1
        end = pending.indexOf(0x0a, start)
      }
      pending = pending.subarray(start)
      if (pending.length > maxLineBytes) {
        this.push(pending)
        pending = Buffer.alloc(0)
      }
      done()
    },
    flush(done: TransformCallback) {
      // A last line without its newline is read as a line (the SDK's transport would wait for its end forever).
      if (pending.toString("utf8").trim() !== "") {
        const refusal = refusalOf(pending.toString("utf8"))
        if (refusal === undefined) this.push(Buffer.concat([pending, Buffer.from("\n")]))
        else refuse(refusal)
      }
      done()
    }
  })
}
