/**
 * The OpenTelemetry SDK's exporters over OTLP/HTTP for `Telemetry`'s settings, apart so that the SDK is loaded only
 * when the environment asks for an export.
 */
import { Telemetry as CoreTelemetry } from "@deep-research/core"
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
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Settings } from "../Telemetry.js"
import { version } from "../version.js"

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
  static readonly keys: ReadonlyArray<string> = [CoreTelemetry.attributes.finishReasons, "deep_research.extract.urls"]
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

/** The exporters of the settings' signals (at least one has a URL). */
export const layer = (settings: Settings): Layer.Layer<never> => {
  const { metricsUrl, tracesUrl } = settings
  const traces =
    tracesUrl === undefined
      ? Layer.empty
      : Layer.provide(
          OtelTracer.layer,
          NodeSdk.layerTracerProvider(
            new ArrayAttributes(new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl })))
          )
        )
  const metrics =
    metricsUrl === undefined
      ? Layer.empty
      : OtelMetrics.layer(
          () =>
            new PeriodicExportingMetricReader({
              exporter: new OTLPMetricExporter({ url: metricsUrl }),
              exportIntervalMillis: settings.metricExportIntervalMillis
            })
        )
  return Layer.merge(traces, metrics).pipe(Layer.provide(resourceLayer))
}
