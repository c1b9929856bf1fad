/**
 * A client of the MCP server on stdio may send its requests and close its input at once (a script piping a file in):
 * it still gets every answer. The SDK's transport notices neither the end of its input nor what is unanswered, so a
 * transport is watched here: every request it receives counts until an answer with its id has been written.
 */
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { JSONRPCMessage, MessageExtraInfo } from "@modelcontextprotocol/sdk/types.js"

const idOf = (message: JSONRPCMessage): string | number | undefined => {
  const id: unknown = Reflect.get(message, "id")
  return typeof id === "string" || typeof id === "number" ? id : undefined
}

/** The requests received and not yet answered. */
export class Unanswered {
  private readonly ids = new Set<string | number>()
  private readonly waiting = new Set<() => void>()

  /** A request (a message with a method and an id) is to be answered. */
  received(message: JSONRPCMessage): void {
    const id = idOf(message)
    if (id !== undefined && "method" in message) this.ids.add(id)
  }

  /** An answer (a message with a result or an error) was written. */
  answered(message: JSONRPCMessage): void {
    const id = idOf(message)
    if (id === undefined || !("result" in message || "error" in message)) return
    this.ids.delete(id)
    if (this.ids.size > 0) return
    for (const wake of this.waiting) wake()
    this.waiting.clear()
  }

  /** Resolves once every request received so far is answered, or after `maxMillis`. */
  settled(maxMillis: number): Promise<void> {
    if (this.ids.size === 0) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, maxMillis)
      timer.unref()
      this.waiting.add(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  /** `transport`, with what it receives and writes counted here. */
  watch(transport: Transport): Transport {
    return new Watched(transport, this)
  }
}

/** A transport whose requests and answers are counted; everything else passes through. */
class Watched implements Transport {
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined
  onmessage?: (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void) | undefined

  constructor(
    private readonly inner: Transport,
    private readonly unanswered: Unanswered
  ) {
    inner.onclose = () => this.onclose?.()
    inner.onerror = (error) => this.onerror?.(error)
    inner.onmessage = (message, extra) => {
      unanswered.received(message)
      this.onmessage?.(message, extra)
    }
  }

  start(): Promise<void> {
    return this.inner.start()
  }

  close(): Promise<void> {
    return this.inner.close()
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    try {
      await this.inner.send(message, options)
    } finally {
      this.unanswered.answered(message)
    }
  }
}
