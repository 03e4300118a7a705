/**
 * HTTP-facing errors. Each class is a `Schema.TaggedError` whose wire form is
 * the conventions' body `{error: {code, message, details}}`; the status is
 * annotated so HttpApi and the OpenAPI document both know it.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { ParseResult, Predicate, Schema } from "effect"
import { shortMessage } from "../platform/Schemas.js"

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
// `retry_after_seconds` is sent as the `Retry-After` header, not in the body.
const retryable = { ...fields, retry_after_seconds: Schema.optional(Schema.Int) }
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", retryable) {}
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", fields) {}
export class NotImplemented extends Schema.TaggedError<NotImplemented>()("NotImplemented", fields) {}
export class BadGateway extends Schema.TaggedError<BadGateway>()("BadGateway", fields) {}
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", retryable) {}
export class GatewayTimeout extends Schema.TaggedError<GatewayTimeout>()("GatewayTimeout", fields) {}

interface WireFields {
  readonly code: string
  readonly message: string
  readonly details?: ReadonlyArray<ErrorDetail> | undefined
}

/**
 * Every HTTP error the API answers with, and its status: the one list the
 * contract's errors, the wire schemas, the status map and `isHttpError` are
 * derived from.
 */
export const httpErrors = [
  [BadRequest, 400],
  [Unauthorized, 401],
  [PaymentRequired, 402],
  [Forbidden, 403],
  [NotFound, 404],
  [Conflict, 409],
  [PayloadTooLarge, 413],
  [UnsupportedMediaType, 415],
  [Unprocessable, 422],
  [TooManyRequests, 429],
  [InternalError, 500],
  [NotImplemented, 501],
  [BadGateway, 502],
  [ServiceUnavailable, 503],
  [GatewayTimeout, 504]
] as const

type ErrorClass = (typeof httpErrors)[number][0]
export type HttpError = InstanceType<ErrorClass>

const statusByTag: ReadonlyMap<string, number> = new Map(
  httpErrors.map(([errorClass, status]) => [errorClass._tag, status])
)

/** True for the errors the API encodes as `ErrorBody`; anything else is answered as a logged 500. */
export const isHttpError = (error: unknown): error is HttpError =>
  Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" && statusByTag.has(error._tag)

/** The status an HTTP error is answered with. */
export const statusOf = (error: HttpError): number => statusByTag.get(error._tag)!

/** The conventions' body of an HTTP error. */
export const errorBodyOf = (error: HttpError): ErrorBody => ({
  error: {
    code: error.code,
    message: error.message,
    ...(error.details === undefined ? {} : { details: error.details })
  }
})

/** Headers an HTTP error's answer carries: `Retry-After` on a 429 or 503 that says when to retry. */
export const errorHeadersOf = (error: HttpError): Readonly<Record<string, string>> =>
  (error._tag === "TooManyRequests" || error._tag === "ServiceUnavailable") && error.retry_after_seconds !== undefined
    ? { "retry-after": String(error.retry_after_seconds) }
    : {}

/** Re-expresses an error class on the wire as `ErrorBody`, keeping its status. */
const onTheWire = <A, I extends WireFields>(errorClass: Schema.Schema<A, I> & { readonly _tag: string }) =>
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
  }).annotations(HttpApiSchema.annotations({ status: statusByTag.get(errorClass._tag)! }))

/** Every HTTP error in wire form, for the contract's `addError`. */
export const AnyHttpErrorWire = Schema.Union(
  // Each class decodes its own tag; the union's members are told apart by their status.
  ...httpErrors.map(([errorClass]) =>
    onTheWire(errorClass as unknown as Schema.Schema<HttpError, WireFields> & { readonly _tag: string })
  )
)

/** Wire forms of the errors credential middlewares declare. */
export const UnauthorizedWire = onTheWire(Unauthorized)
export const ForbiddenWire = onTheWire(Forbidden)
export const NotFoundWire = onTheWire(NotFound)

export const notImplemented = (what: string) =>
  new NotImplemented({ code: "not_implemented", message: `${what} is not implemented yet.` })

/** A 429 whose answer carries `Retry-After` (seconds). */
export const tooManyRequests = (retryAfterSeconds: number, message: string, code = "rate_limited") =>
  new TooManyRequests({ code, message, retry_after_seconds: retryAfterSeconds })

/** The conventions' 500 body, quoting the request id (for a defect the service has logged). */
export const internalErrorBody = (requestId: string): ErrorBody => ({
  error: {
    code: "internal_error",
    message: `An internal error occurred; quote request id ${requestId} when reporting it.`,
    request_id: requestId
  }
})

const formatPath = (path: ReadonlyArray<PropertyKey>) => path.map(String).join(".")

const expectedActual = /^Expected (.+), actual (.+)$/s

/** Whether `path` is `parent` or lies inside it. */
const within = (path: string, parent: string) => path === parent || parent === "" || path.startsWith(`${parent}.`)

/**
 * A union's members each fail on their own (`Expected "a", actual "x"`, then `Expected "b", actual "x"`): the
 * issues at one path with one actual value become one that names every allowed value. An optional (or
 * nullable) field's `Expected undefined, actual ...` says nothing beside the reason its value failed, so it
 * is dropped then: beside a reason at its path, or inside it (an object's field), where it would quote the
 * whole object, write-only secrets beside the value that failed (an MCP server's `headers`).
 */
const withAlternativesFolded = (details: ReadonlyArray<ErrorDetail>): ReadonlyArray<ErrorDetail> => {
  const folded: Array<{ path: string; expected: Array<string>; actual: string } | ErrorDetail> = []
  const absent = (detail: ErrorDetail) => /^Expected (undefined|null), actual /.test(detail.message)
  const omittable = (detail: ErrorDetail) =>
    absent(detail) &&
    details.some((other) =>
      other.path === detail.path
        ? !other.message.startsWith("Expected ")
        : within(other.path, detail.path) && !absent(other)
    )
  for (const detail of details.filter((each) => !omittable(each))) {
    // An actual value can be a megabyte; the message is cut to 300 characters below anyway.
    const match = expectedActual.exec(shortMessage(detail.message, 4_096))
    const last = folded[folded.length - 1]
    if (match === null) folded.push(detail)
    else if (last !== undefined && "expected" in last && last.path === detail.path && last.actual === match[2]) {
      if (!last.expected.includes(match[1]!)) last.expected.push(match[1]!)
    } else folded.push({ path: detail.path, expected: [match[1]!], actual: match[2]! })
  }
  return folded.map((entry) =>
    "expected" in entry
      ? {
          path: entry.path,
          message:
            entry.expected.length === 1
              ? `Expected ${entry.expected[0]}, actual ${entry.actual}`
              : `Expected one of ${entry.expected.join(" | ")}, actual ${entry.actual}`
        }
      : entry
  )
}

/** Decodes with every failing path reported, not only the first: what a refusal's details list. */
export const decodeReportingAll = <A, I>(schema: Schema.Schema<A, I>) => Schema.decodeUnknown(schema, { errors: "all" })

/**
 * The 400 for a request that does not match its endpoint's schemas, naming
 * every failing path (`issues` as ParseResult's ArrayFormatter lists them).
 */
export const validationFailed = (
  issues: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>,
  message = "The request does not match this endpoint's schema."
) => {
  const details = withAlternativesFolded(
    issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message }))
  ).map((detail) => ({ path: detail.path, message: shortMessage(detail.message) }))
  const first = details[0]
  return new BadRequest({
    code: "validation_failed",
    message:
      first === undefined
        ? message
        : `${first.path === "" ? "body" : first.path}: ${first.message}` +
          (details.length > 1 ? ` (and ${details.length - 1} more; see details)` : ""),
    details
  })
}

/** `validationFailed` for a schema's ParseError. */
export const schemaRefusal = (error: ParseResult.ParseError) =>
  validationFailed(ParseResult.ArrayFormatter.formatErrorSync(error), ParseResult.TreeFormatter.formatErrorSync(error))
