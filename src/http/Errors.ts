/**
 * HTTP-facing errors. Each class is a `Schema.TaggedError` whose wire form is
 * the conventions' body `{error: {code, message, details}}`; the status is
 * annotated so HttpApi and the OpenAPI document both know it.
 */
import { HttpApiSchema, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect, Predicate, Schema } from "effect"

export const ErrorDetail = Schema.Struct({
  path: Schema.String,
  message: Schema.String
}).annotations({ identifier: "ErrorDetail" })
export type ErrorDetail = typeof ErrorDetail.Type

export const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String.annotations({ description: "Stable snake_case code" }),
    message: Schema.String.annotations({ description: "One sentence a person can act on" }),
    details: Schema.optional(Schema.Array(ErrorDetail)),
    request_id: Schema.optional(Schema.String)
  })
}).annotations({ identifier: "ErrorBody" })
export type ErrorBody = typeof ErrorBody.Type

const fields = {
  code: Schema.String,
  message: Schema.String,
  details: Schema.optional(Schema.Array(ErrorDetail))
}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", fields) {}
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields) {}
export class PaymentRequired extends Schema.TaggedError<PaymentRequired>()("PaymentRequired", fields) {}
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields) {}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields) {}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", fields) {}
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", fields) {}
export class Unprocessable extends Schema.TaggedError<Unprocessable>()("Unprocessable", fields) {}
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  ...fields,
  retry_after_seconds: Schema.optional(Schema.Int)
}) {}
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", fields) {}
export class NotImplemented extends Schema.TaggedError<NotImplemented>()("NotImplemented", fields) {}
export class BadGateway extends Schema.TaggedError<BadGateway>()("BadGateway", fields) {}
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", fields) {}
export class GatewayTimeout extends Schema.TaggedError<GatewayTimeout>()("GatewayTimeout", fields) {}

interface WireFields {
  readonly code: string
  readonly message: string
  readonly details?: ReadonlyArray<ErrorDetail> | undefined
}

/** Re-expresses an error class on the wire as `ErrorBody`, keeping its status. */
const onTheWire = <A, I extends WireFields>(
  errorClass: Schema.Schema<A, I> & { readonly _tag: string },
  status: number
) =>
  Schema.transform(ErrorBody, errorClass, {
    strict: false,
    decode: (body) => ({ _tag: errorClass._tag, ...body.error }),
    encode: (error: I) => ({
      error: {
        code: error.code,
        message: error.message,
        ...(error.details === undefined ? {} : { details: error.details })
      }
    })
  }).annotations(HttpApiSchema.annotations({ status }))

/** Every HTTP error the API may answer with, in wire form, for `HttpApi.addError`. */
export const BadRequestWire = onTheWire(BadRequest, 400)
export const UnauthorizedWire = onTheWire(Unauthorized, 401)
export const PaymentRequiredWire = onTheWire(PaymentRequired, 402)
export const ForbiddenWire = onTheWire(Forbidden, 403)
export const NotFoundWire = onTheWire(NotFound, 404)
export const ConflictWire = onTheWire(Conflict, 409)
export const PayloadTooLargeWire = onTheWire(PayloadTooLarge, 413)
export const UnsupportedMediaTypeWire = onTheWire(UnsupportedMediaType, 415)
export const UnprocessableWire = onTheWire(Unprocessable, 422)
export const TooManyRequestsWire = onTheWire(TooManyRequests, 429)
export const InternalErrorWire = onTheWire(InternalError, 500)
export const NotImplementedWire = onTheWire(NotImplemented, 501)
export const BadGatewayWire = onTheWire(BadGateway, 502)
export const ServiceUnavailableWire = onTheWire(ServiceUnavailable, 503)
export const GatewayTimeoutWire = onTheWire(GatewayTimeout, 504)

export type HttpError =
  | BadRequest
  | Unauthorized
  | PaymentRequired
  | Forbidden
  | NotFound
  | Conflict
  | PayloadTooLarge
  | UnsupportedMediaType
  | Unprocessable
  | TooManyRequests
  | InternalError
  | NotImplemented
  | BadGateway
  | ServiceUnavailable
  | GatewayTimeout

const httpErrorTags = new Set([
  "BadRequest",
  "Unauthorized",
  "PaymentRequired",
  "Forbidden",
  "NotFound",
  "Conflict",
  "PayloadTooLarge",
  "UnsupportedMediaType",
  "Unprocessable",
  "TooManyRequests",
  "InternalError",
  "NotImplemented",
  "BadGateway",
  "ServiceUnavailable",
  "GatewayTimeout"
])

/** True for the errors the API encodes as `ErrorBody`; anything else is answered as a logged 500. */
export const isHttpError = (error: unknown): error is HttpError =>
  Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" && httpErrorTags.has(error._tag)

export const notImplemented = (what: string) =>
  new NotImplemented({ code: "not_implemented", message: `${what} is not implemented yet.` })

/** A 429 whose response carries `Retry-After` (seconds). */
export const tooManyRequests = (retryAfterSeconds: number, message: string, code = "rate_limited") =>
  HttpApp.appendPreResponseHandler((_, response) =>
    Effect.succeed(
      response.status === 429
        ? HttpServerResponse.setHeader(response, "retry-after", String(retryAfterSeconds))
        : response
    )
  ).pipe(
    Effect.zipRight(
      Effect.fail(new TooManyRequests({ code, message, retry_after_seconds: retryAfterSeconds }))
    )
  )
