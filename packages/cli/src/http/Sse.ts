/**
 * Server-Sent Events as the HTML standard frames them: `id`, `event` and `data` lines, a blank line after each
 * event, comment lines to keep idle connections open through proxies.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Duration from "effect/Duration"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"

/** One event. Data with line breaks is sent as several `data` lines, which the client joins back. */
export interface Message {
  readonly id?: string | number | undefined
  readonly event?: string | undefined
  readonly data: string
}

/** The wire form of one event. */
export const encode = (message: Message): string => {
  const lines: Array<string> = []
  if (message.id !== undefined) lines.push(`id: ${message.id}`)
  if (message.event !== undefined) lines.push(`event: ${message.event}`)
  for (const line of message.data.split(/\r\n|\r|\n/)) lines.push(`data: ${line}`)
  return `${lines.join("\n")}\n\n`
}

const encoder = new TextEncoder()

/** A streamed `text/event-stream` response; a comment every `keepAlive` while the stream is quiet. */
export const response = (
  messages: Stream.Stream<string>,
  keepAlive: Duration.DurationInput = Duration.seconds(15)
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.stream(
    Stream.merge(messages, Stream.as(Stream.fromSchedule(Schedule.spaced(keepAlive)), ": keep-alive\n\n"), {
      haltStrategy: "left"
    }).pipe(Stream.map((text) => encoder.encode(text))),
    {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
    }
  )
