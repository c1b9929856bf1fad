/**
 * An OTLP endpoint that refuses what it is sent, or is not there at all: the official exporters tell only
 * OpenTelemetry's diagnostic logger, silent unless a program sets one. The CLI says the first failure of each signal
 * as a warning, once, and the traced work goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as OtlpExport from "../src/OtlpExport.js"

/** A collector that answers every export with `status`; closed with the scope. */
const collector = (status: number) =>
  Effect.acquireRelease(
    Effect.async<http.Server>((resume) => {
      const server = http.createServer((request, response) => {
        request.resume()
        request.on("end", () => {
          response.statusCode = status
          response.end(`{"message":"refused with ${status}"}`)
        })
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
  ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`))

/** A port nothing listens on: one the system gave a server that is closed again. */
const closedPort = Effect.async<number>((resume) => {
  const server = http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Runs traced work under the exporters of `settings` until they are flushed; gives the warnings logged. */
const warningsOf = (settings: OtlpExport.Settings) =>
  Effect.gen(function* () {
    const warnings: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
    })
    const finished = yield* Effect.scoped(
      Effect.gen(function* () {
        yield* Effect.withSpan(Effect.sleep("10 millis"), "traced work")
        // Several metric exports fail meanwhile (every 50 ms).
        yield* Effect.sleep("400 millis")
        return "finished"
      }).pipe(Effect.provide(OtlpExport.layerFrom(settings)))
    ).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    return { finished, warnings }
  })

describe("OTLP export failures", () => {
  it.scopedLive("a collector that refuses each export is said once a signal, with its URL and its answer", () =>
    Effect.gen(function* () {
      const url = yield* collector(404)
      const { finished, warnings } = yield* warningsOf({
        tracesUrl: `${url}/v1/traces`,
        metricsUrl: `${url}/v1/metrics`,
        metricExportIntervalMillis: 50,
        captureContent: false
      })
      assert.strictEqual(finished, "finished")
      assert.strictEqual(warnings.length, 2, warnings.join("\n"))
      const traces = warnings.find((line) => line.includes("traces"))
      const metrics = warnings.find((line) => line.includes("metrics"))
      assert.include(traces, `traces could not be exported to ${url}/v1/traces`)
      assert.include(metrics, `metrics could not be exported to ${url}/v1/metrics`)
      assert.include(metrics, "said once")
    })
  )

  it.scopedLive("an endpoint nothing listens on is said too, with the connection's error", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      // The exporter retries a refused connection until its timeout (10 s unless set), and the tracer's flush at the
      // end waits 3 s at most: the same time limit as README's advice for an endpoint that does not answer.
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const before = process.env["OTEL_EXPORTER_OTLP_TIMEOUT"]
          process.env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "1000"
          return before
        }),
        (before) =>
          Effect.sync(() => {
            if (before === undefined) delete process.env["OTEL_EXPORTER_OTLP_TIMEOUT"]
            else process.env["OTEL_EXPORTER_OTLP_TIMEOUT"] = before
          })
      )
      const { finished, warnings } = yield* warningsOf({
        tracesUrl: `http://127.0.0.1:${port}/v1/traces`,
        metricsUrl: undefined,
        metricExportIntervalMillis: 60_000,
        captureContent: false
      })
      assert.strictEqual(finished, "finished")
      assert.strictEqual(warnings.length, 1, warnings.join("\n"))
      assert.include(warnings[0], `traces could not be exported to http://127.0.0.1:${port}/v1/traces`)
      assert.include(warnings[0], "ECONNREFUSED")
    })
  )

  it.scopedLive("a collector that takes the exports is not said", () =>
    Effect.gen(function* () {
      const url = yield* collector(200)
      const { warnings } = yield* warningsOf({
        tracesUrl: `${url}/v1/traces`,
        metricsUrl: `${url}/v1/metrics`,
        metricExportIntervalMillis: 50,
        captureContent: false
      })
      assert.deepStrictEqual(warnings, [])
    })
  )
})
