/**
 * Follows a session's Server-Sent Events over fetch (EventSource cannot send the API token): the events from the
 * last one seen, reconnecting with Last-Event-ID when the connection drops, until the server's `end` event.
 */
import { headers } from "./api.js"

export interface Handlers {
  readonly onEvent: (data: string, id: number) => void
  readonly onEnd: (data: string) => void
  readonly onError: (message: string) => void
}

interface Parsed {
  readonly id: string | undefined
  readonly event: string | undefined
  readonly data: string
}

const parse = (block: string): Parsed | undefined => {
  let id: string | undefined
  let event: string | undefined
  const data: Array<string> = []
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon < 0 ? line : line.slice(0, colon)
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "")
    if (field === "id") id = value
    else if (field === "event") event = value
    else if (field === "data") data.push(value)
  }
  return data.length === 0 ? undefined : { id, event, data: data.join("\n") }
}

/** Follows the events of a session; call the returned function to stop. */
export const follow = (sessionId: string, handlers: Handlers): (() => void) => {
  const controller = new AbortController()
  let lastId = 0
  let ended = false
  const connect = async (attempt: number): Promise<void> => {
    try {
      const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/events`, {
        headers: headers(lastId > 0 ? { "last-event-id": String(lastId) } : {}),
        signal: controller.signal
      })
      if (!response.ok || response.body === null) {
        handlers.onError(`The events could not be followed (${response.status}).`)
        return
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      while (true) {
        const { done, value } = await reader.read()
        if (done) break
        buffer += value.replace(/\r\n?/g, "\n")
        let cut = buffer.indexOf("\n\n")
        while (cut >= 0) {
          const message = parse(buffer.slice(0, cut))
          buffer = buffer.slice(cut + 2)
          cut = buffer.indexOf("\n\n")
          if (message === undefined) continue
          if (message.event === "end") {
            ended = true
            handlers.onEnd(message.data)
            continue
          }
          const id = Number(message.id)
          if (Number.isInteger(id)) lastId = id
          handlers.onEvent(message.data, id)
        }
      }
    } catch (error) {
      if (controller.signal.aborted) return
      if (attempt >= 5) {
        handlers.onError(`The connection was lost: ${String(error)}`)
        return
      }
    }
    if (!ended && !controller.signal.aborted) {
      setTimeout(() => void connect(attempt + 1), Math.min(500 * 2 ** attempt, 8_000))
    }
  }
  void connect(0)
  return () => controller.abort()
}
