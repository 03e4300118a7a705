/**
 * Request bodies: media types, reading a body within its limit, and the one
 * JSON parse (with the storability check) that both the request pipeline
 * and the fast lane apply.
 */
import { Effect, Either } from "effect"
import type { Readable } from "node:stream"
import { hasDuplicateKeys, unstorableJson } from "../platform/Json.js"
import { BadRequest, PayloadTooLarge } from "./Errors.js"

export const YAML_TYPES = ["application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "application/json"]

/** The media type of a Content-Type header, lower-cased, without parameters. */
export const mediaTypeOf = (contentType: string | undefined) => (contentType ?? "").split(";")[0]!.trim().toLowerCase()

export const isJsonType = (type: string) => type === "application/json" || type.endsWith("+json")

export const tooLarge = (limit: number) =>
  new PayloadTooLarge({ code: "payload_too_large", message: `The request body exceeds the ${limit}-byte limit.` })

const unreadable = () => new BadRequest({ code: "unreadable_body", message: "The request body could not be read." })

/**
 * A JSON body as a value the database can store, or the 400 for it: empty
 * text is `null` (no body), malformed JSON is `malformed_json`, and JSON
 * PostgreSQL cannot store or that is absurdly large is `validation_failed`
 * naming the first offending path.
 */
/**
 * JSON.parse's reason without the excerpt of the body V8 quotes (`..."password": hunter2-se"...`): a body may
 * carry a secret (a password, a provider key), which an error answer must not echo.
 */
const parseReasonOf = (error: unknown) => {
  const message = error instanceof Error ? error.message : String(error)
  const quoting = /^(?:(.*?),\s*)?(?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s.exec(message)
  return quoting === null ? message : (quoting[1] ?? "unexpected input")
}

export const parseJsonBody = (text: string): Either.Either<unknown, BadRequest> => {
  if (text.trim() === "") return Either.right(null)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return Either.left(
      new BadRequest({
        code: "malformed_json",
        message: `The request body is not valid JSON: ${parseReasonOf(error)}.`
      })
    )
  }
  const problem =
    unstorableJson(value) ??
    (hasDuplicateKeys(text, value) ? { path: "", message: "an object names the same key twice" } : undefined)
  return problem === undefined
    ? Either.right(value)
    : Either.left(
        new BadRequest({
          code: "validation_failed",
          message: `${problem.path === "" ? "body" : problem.path}: ${problem.message}`,
          details: [problem]
        })
      )
}

/**
 * Reads a Node request's whole body. Past the limit the rest is drained and
 * dropped (so the client, still sending, can read the 413); past 8x the
 * limit the connection is given up.
 */
export const readNodeBody = (source: Readable, limit: number) =>
  Effect.async<Buffer, BadRequest | PayloadTooLarge>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    const stop = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      bytes += chunk.length
      if (bytes > limit * 8) {
        stop()
        source.destroy()
        resume(Effect.fail(tooLarge(limit)))
      } else if (bytes <= limit) chunks.push(chunk)
    }
    const onEnd = () => {
      stop()
      resume(bytes > limit ? Effect.fail(tooLarge(limit)) : Effect.succeed(Buffer.concat(chunks, bytes)))
    }
    const onError = () => {
      stop()
      resume(Effect.fail(unreadable()))
    }
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onError)
    return Effect.sync(() => {
      stop()
      source.destroy()
    })
  })
