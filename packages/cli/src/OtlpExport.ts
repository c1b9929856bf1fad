/**
 * Export of traces and metrics over OTLP/HTTP, configured the standard OpenTelemetry way: off unless
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`) is
 * set; `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` name the resource; `OTEL_SDK_DISABLED=true` turns it all
 * off; `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` puts prompt, answer, query and page text on spans.
 * The core names its spans and metrics on Effect's own tracer; this layer sends them. Spans and a last reading of the
 * metrics are flushed when the layer is released, before the process exits.
 */
import { Telemetry } from "@deep-research/core"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/** Where and what to export, as read from the environment. */
export interface Settings {
  /** The OTLP/HTTP URL spans go to; undefined: no traces. */
  readonly tracesUrl: string | undefined
  /** The OTLP/HTTP URL metrics go to; undefined: no metrics. */
  readonly metricsUrl: string | undefined
  readonly metricExportIntervalMillis: number
  readonly captureContent: boolean
}

const optionalString = (name: string) =>
  Config.map(Config.option(Config.string(name)), (value) =>
    Option.filter(
      Option.map(value, (text) => text.trim()),
      (text) => text !== ""
    )
  )

// The specification's booleans: "true" in any case is true, anything else (or nothing) is false.
const flag = (name: string) =>
  Config.map(optionalString(name), (value) => Option.exists(value, (text) => text.toLowerCase() === "true"))

/** The URL of a signal: its own variable as it is, else the general endpoint with the signal's path appended. */
const signalUrl = (base: Option.Option<string>, specific: Option.Option<string>, path: string): string | undefined =>
  Option.getOrUndefined(Option.orElse(specific, () => Option.map(base, (url) => `${url.replace(/\/+$/, "")}/${path}`)))

/** The settings from the standard OpenTelemetry environment variables. */
export const settingsConfig: Config.Config<Settings> = Config.all({
  disabled: flag("OTEL_SDK_DISABLED"),
  endpoint: optionalString("OTEL_EXPORTER_OTLP_ENDPOINT"),
  traces: optionalString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  metrics: optionalString("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
  interval: optionalString("OTEL_METRIC_EXPORT_INTERVAL"),
  captureContent: flag("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
}).pipe(
  Config.map(({ captureContent, disabled, endpoint, interval, metrics, traces }): Settings => {
    const millis = Option.getOrUndefined(Option.map(interval, Number))
    return {
      tracesUrl: disabled ? undefined : signalUrl(endpoint, traces, "v1/traces"),
      metricsUrl: disabled ? undefined : signalUrl(endpoint, metrics, "v1/metrics"),
      metricExportIntervalMillis: millis !== undefined && Number.isInteger(millis) && millis > 0 ? millis : 60_000,
      captureContent
    }
  })
)

/**
 * The exporters of the given settings; nothing but the content-capture setting when neither signal has a URL. The
 * OpenTelemetry SDK (over a thousand modules) is loaded only then, so that a command run without telemetry does not
 * load it.
 */
export const layerFrom = (settings: Settings): Layer.Layer<never> => {
  const capture = Layer.succeed(Telemetry.CaptureContent, settings.captureContent)
  if (settings.tracesUrl === undefined && settings.metricsUrl === undefined) return capture
  return Layer.merge(
    capture,
    Layer.unwrapEffect(
      Effect.map(
        Effect.promise(() => import("./internal/telemetry/otlpExporters.js")),
        (exporters) => exporters.layer(settings)
      )
    )
  )
}

/** The exporters the environment asks for (see the module's comment). */
export const layer: Layer.Layer<never> = Layer.unwrapEffect(
  Effect.map(Effect.orDie(settingsConfig), (settings) => layerFrom(settings))
)

/**
 * The tracer and the content-capture setting of the current fiber, as a layer: runtimes made inside the program (the
 * host of `serve` and the MCP server) export through the exporters of the program.
 */
export const inherited: Effect.Effect<Layer.Layer<never>> = Effect.gen(function* () {
  const tracer = yield* Effect.tracer
  const capture = yield* Telemetry.CaptureContent
  return Layer.merge(Layer.setTracer(tracer), Layer.succeed(Telemetry.CaptureContent, capture))
})
