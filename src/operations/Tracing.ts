/**
 * Span export: every use case is a span (`Effect.fn("Domain.useCase")`,
 * the hot endpoints' Effect paths, the platform's `http.server` spans, SQL
 * statements), so a trace of a request shows its steps. With
 * OTEL_EXPORTER_OTLP_ENDPOINT set they are exported over OTLP/HTTP as JSON
 * (`@effect/opentelemetry`'s OtlpTracer, no OpenTelemetry SDK); unset
 * (the default), nothing is exported and spans cost only their bookkeeping.
 * The collector is operator configuration, like KAFKA_BROKERS, so it is not
 * subject to the outbound guard (which screens tenants' URLs).
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import { Duration, Effect, Layer, Option } from "effect"
import { AppConfig } from "../platform/Config.js"

/**
 * `fetch` with each request abandoned (and its socket closed) after `timeout`, as a transport error: the exporter
 * has no time limit of its own, so a collector that never answers kept every export's request, and the batch of
 * spans it carried, for good.
 */
const fetchWithin = (timeout: Duration.DurationInput) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(
      HttpClient.HttpClient,
      HttpClient.transform((send, request) =>
        Effect.timeoutFail(send, {
          duration: timeout,
          onTimeout: () =>
            new HttpClientError.RequestError({
              request,
              reason: "Transport",
              description: `no answer within ${Duration.format(timeout)}`
            })
        })
      )
    )
  ).pipe(Layer.provide(FetchHttpClient.layer))

/** Spans of this process to the OTLP collector at `endpoint` (every `exportInterval`, each export within `timeout`). */
export const otlpTracing = (
  endpoint: URL,
  serviceName: string,
  timeout: Duration.DurationInput,
  exportInterval?: Duration.DurationInput
) =>
  OtlpTracer.layer({
    url: new URL("v1/traces", endpoint.href.endsWith("/") ? endpoint : `${endpoint.href}/`).href,
    resource: { serviceName },
    exportInterval
  }).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(fetchWithin(timeout)))

/** OTEL_EXPORTER_OTLP_ENDPOINT's collector, or nothing when it is unset. */
export const TracingLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Option.match(config.otlpEndpoint, {
      onNone: () => Layer.empty,
      onSome: (endpoint) => otlpTracing(endpoint, config.otelServiceName, Duration.millis(config.otlpTimeoutMillis))
    })
  )
).pipe(Layer.provide(AppConfig.Default))
