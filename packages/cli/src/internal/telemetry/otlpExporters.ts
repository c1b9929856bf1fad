/**
 * The OpenTelemetry SDK's exporters over OTLP/HTTP for `OtlpExport`'s settings, apart so that the SDK is loaded only
 * when the environment asks for an export.
 */
import { Telemetry } from "@deep-research/core"
import * as OtelMetrics from "@effect/opentelemetry/Metrics"
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as OtelResource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import type { Context as OtelContext } from "@opentelemetry/api"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor, type ReadableSpan, type Span, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { version } from "../../version.js"

/**
 * The resource: the SDK's defaults, then `service.name` deep-research and its version, then what
 * `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` say (they win).
 */
const resourceLayer = Layer.sync(OtelResource.Resource, () =>
  defaultResource()
    .merge(resourceFromAttributes({ "service.name": "deep-research", "service.version": version }))
    .merge(detectResources({ detectors: [envDetector] }))
)

const decodeStringArray = Schema.decodeUnknownOption(Schema.parseJson(Schema.Array(Schema.String)))

/**
 * Array attributes reach the SDK as JSON text (Effect's tracer turns every non-primitive value into text); the ones the
 * conventions define as arrays (`gen_ai.response.finish_reasons`) go out as arrays.
 */
class ArrayAttributes implements SpanProcessor {
  static readonly keys: ReadonlyArray<string> = [Telemetry.attributes.finishReasons, "deep_research.extract.urls"]
  constructor(private readonly next: SpanProcessor) {}
  onStart(span: Span, context: OtelContext): void {
    this.next.onStart(span, context)
  }
  onEnd(span: ReadableSpan): void {
    for (const key of ArrayAttributes.keys) {
      const value = span.attributes[key]
      if (typeof value !== "string") continue
      const decoded = decodeStringArray(value)
      if (Option.isSome(decoded)) span.attributes[key] = [...decoded.value]
    }
    this.next.onEnd(span)
  }
  forceFlush(): Promise<void> {
    return this.next.forceFlush()
  }
  shutdown(): Promise<void> {
    return this.next.shutdown()
  }
}

/** What an exporter tells its caller of one export (`@opentelemetry/core`'s `ExportResult`). */
type ExportResult = Parameters<Parameters<OTLPTraceExporter["export"]>[1]>[0]

/** `ExportResultCode.SUCCESS` of `@opentelemetry/core`. */
const exportSucceeded = 0

/**
 * Has `exporter` say its first failed export once, through `say`: the SDK reports a failure only to OpenTelemetry's
 * diagnostic logger, which is silent unless a program sets one, so a wrong endpoint or a collector that is down would
 * lose every span without a word. Later failures are not said again; the run goes on either way.
 */
const sayingFirstFailure = <T extends { export(items: never, done: (result: ExportResult) => void): void }>(
  exporter: T,
  say: (error: Error | undefined) => void
): T => {
  const exportItems = exporter.export.bind(exporter)
  let said = false
  exporter.export = (items, done) =>
    exportItems(items, (result) => {
      if (result.code !== exportSucceeded && !said) {
        said = true
        say(result.error)
      }
      done(result)
    })
  return exporter
}

/** Where each signal goes (`OtlpExport.Settings` gives them): undefined, not exported. */
export interface Destinations {
  readonly tracesUrl: string | undefined
  readonly metricsUrl: string | undefined
  readonly metricExportIntervalMillis: number
}

/** The exporters of the signals with a URL (at least one); a first failure of each is logged as a warning. */
export const layer = (settings: Destinations): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.map(Effect.runtime<never>(), (runtime) => {
      const { metricsUrl, tracesUrl } = settings
      const sayFailure = (signal: string, url: string) => (error: Error | undefined) =>
        Runtime.runSync(runtime)(
          Effect.logWarning(
            `OpenTelemetry: ${signal} could not be exported to ${url}` +
              `${error === undefined ? "" : `: ${error.message}`} (said once; the run goes on without them)`
          )
        )
      const traces =
        tracesUrl === undefined
          ? Layer.empty
          : Layer.provide(
              OtelTracer.layer,
              NodeSdk.layerTracerProvider(
                new ArrayAttributes(
                  new BatchSpanProcessor(
                    sayingFirstFailure(new OTLPTraceExporter({ url: tracesUrl }), sayFailure("traces", tracesUrl))
                  )
                )
              )
            )
      const metrics =
        metricsUrl === undefined
          ? Layer.empty
          : OtelMetrics.layer(
              () =>
                new PeriodicExportingMetricReader({
                  exporter: sayingFirstFailure(
                    new OTLPMetricExporter({ url: metricsUrl }),
                    sayFailure("metrics", metricsUrl)
                  ),
                  exportIntervalMillis: settings.metricExportIntervalMillis
                })
            )
      return Layer.merge(traces, metrics).pipe(Layer.provide(resourceLayer))
    })
  )
