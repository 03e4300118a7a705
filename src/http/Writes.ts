/**
 * Writing answers to Node's response: the only code, besides the platform's
 * own server, that writes a Node response. Used by the fast lane; every
 * domain returns values (a decoded success, an HTTP error, or a platform
 * response whose body is a stream) and never sees a response object.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Effect, Either, Exit, Option, type ParseResult } from "effect"
import type { ServerResponse } from "node:http"
import { Readable } from "node:stream"
import { databaseFaultOf } from "../platform/Sql.js"
import { errorBodyOf, errorHeadersOf, type HttpError, internalErrorBody, isHttpError, statusOf } from "./Errors.js"

/** What to send: a JSON body, or a platform response (bytes or a Node stream: the gateway's pass-through). */
export type LaneAnswer =
  | { readonly status: number; readonly json: unknown; readonly headers: Readonly<Record<string, string>> }
  | { readonly status: number; readonly response: HttpServerResponse.HttpServerResponse }

/** How an endpoint's success goes out: a platform response as is, or JSON encoded by the contract. */
export interface SuccessEncoding {
  readonly raw: boolean
  readonly status: number
  readonly encode: (value: unknown) => Either.Either<unknown, ParseResult.ParseError>
}

export const errorAnswer = (error: HttpError): LaneAnswer => ({
  status: statusOf(error),
  json: errorBodyOf(error),
  headers: errorHeadersOf(error)
})

const internalError = (requestId: string): LaneAnswer => ({
  status: 500,
  json: internalErrorBody(requestId),
  headers: {}
})

/** What answering found wrong, to log: a defect (answered 500), or the database's failure (answered 4xx or 503). */
export interface Problem {
  readonly level: "error" | "warning"
  readonly message: string
  readonly cause: unknown
}

export const logProblem = (problem: Problem | undefined) =>
  problem === undefined
    ? Effect.void
    : problem.level === "error"
      ? Effect.logError(problem.message, problem.cause)
      : Effect.logWarning(problem.message, problem.cause)

/**
 * The HTTP error a database failure is answered with (see `databaseFaultOf`) and what to log: a value
 * the database refused is a client's doing (a warning); a database out of reach is an operator's concern.
 */
export const databaseAnswerOf = (
  defect: unknown,
  cause: unknown
): { readonly error: HttpError; readonly problem: Problem } | undefined => {
  const error = databaseFaultOf(defect)
  if (error === undefined) return undefined
  return {
    error,
    problem:
      statusOf(error) >= 500
        ? { level: "error", message: "database unavailable", cause }
        : { level: "warning", message: "database refused a client's value", cause }
  }
}

/**
 * The answer to an outcome: its success, its HTTP error, the 4xx or 503 for a database failure (see
 * `databaseAnswerOf`), else the conventions' 500; with what to log.
 */
export const answerOf = (
  outcome: Exit.Exit<unknown, HttpError>,
  success: SuccessEncoding,
  requestId: string
): { readonly answer: LaneAnswer; readonly problem?: Problem } => {
  if (Exit.isSuccess(outcome)) {
    const value = outcome.value
    if (success.raw && HttpServerResponse.isServerResponse(value))
      return { answer: { status: value.status, response: value } }
    const encoded = success.encode(value)
    return Either.isRight(encoded)
      ? { answer: { status: success.status, json: encoded.right, headers: {} } }
      : { answer: internalError(requestId), problem: unhandled(encoded.left) }
  }
  const failure = Cause.failureOption(outcome.cause)
  if (Option.isSome(failure) && isHttpError(failure.value)) return { answer: errorAnswer(failure.value) }
  const database = databaseAnswerOf(Cause.squash(outcome.cause), outcome.cause)
  if (database !== undefined) return { answer: errorAnswer(database.error), problem: database.problem }
  return { answer: internalError(requestId), problem: unhandled(outcome.cause) }
}

const unhandled = (cause: unknown): Problem => ({ level: "error", message: "unhandled failure", cause })

/** Writes a platform response: bytes, a Node stream piped with backpressure, or nothing. */
const writePlatformResponse = (
  response: ServerResponse,
  answer: HttpServerResponse.HttpServerResponse,
  requestId: string
) => {
  const body = answer.body
  const headers: Record<string, string | number> = { ...answer.headers, "x-request-id": requestId }
  if (body.contentType !== undefined) headers["content-type"] = body.contentType
  if (body.contentLength !== undefined) headers["content-length"] = body.contentLength
  response.writeHead(answer.status, headers)
  if (body._tag === "Uint8Array") response.end(body.body)
  else if (body._tag === "Raw" && body.body instanceof Readable) pipeToResponse(body.body, response)
  else response.end()
}

/**
 * `body` piped to `response` with backpressure, each one's failure ending the other, as the platform's server
 * does with `stream.pipeline`: a body that fails (or is destroyed) destroys the response, and a response closed
 * before the body ended (the client left) destroys the body. Not `pipeline` itself: on Node 20 each call makes an
 * AbortController and, when it finishes, a DOMException with its stack trace, about 40 µs of main thread per
 * gateway call (docs/BENCHMARKS.md).
 */
const pipeToResponse = (body: Readable, response: ServerResponse) => {
  const fail = () => {
    if (!response.destroyed) response.destroy()
  }
  body.once("error", fail)
  body.once("close", () => {
    if (!body.readableEnded) fail()
  })
  const stop = () => {
    if (!body.destroyed && !body.readableEnded) body.destroy()
  }
  response.once("close", stop)
  // A listener of our own, so that a response's error (its socket failed) is never re-thrown by `pipe`.
  response.on("error", stop)
  body.pipe(response)
}

/** Writes an answer with the request id. */
export const writeAnswer = (response: ServerResponse, answer: LaneAnswer, requestId: string) => {
  if ("response" in answer) return writePlatformResponse(response, answer.response, requestId)
  const json = JSON.stringify(answer.json)
  response.writeHead(answer.status, {
    ...answer.headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(json),
    "x-request-id": requestId
  })
  response.end(json)
}
