/**
 * One request to an upstream provider over node:http(s) with keep-alive
 * agents. The answer is the response head and its body as a Node stream, so
 * the caller can pass it on chunk by chunk; `abort` destroys the request
 * (client gone, or done early). Interrupting the wait for the head aborts it
 * too. An idle socket (no head, or no body chunk, for `timeoutMillis`) ends
 * the call: before the head as `UpstreamTimeout`, after it as a body error.
 */
import { Data, Effect } from "effect"
import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"

export class UpstreamTimeout extends Data.TaggedError("UpstreamTimeout")<{ readonly afterMillis: number }> {}
export class UpstreamUnreachable extends Data.TaggedError("UpstreamUnreachable")<{ readonly reason: string }> {}

export interface UpstreamResponse {
  readonly status: number
  readonly headers: IncomingMessage["headers"]
  readonly body: IncomingMessage
  readonly abort: () => void
}

const httpAgent = new HttpAgent({ keepAlive: true, keepAliveMsecs: 10_000, scheduling: "lifo" })
const httpsAgent = new HttpsAgent({ keepAlive: true, keepAliveMsecs: 10_000, scheduling: "lifo" })

/**
 * Sends the request and calls `settle` once: with the response head, or with
 * the error that ended the call before it. Answers `abort`.
 */
export const sendUpstream = (
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: Uint8Array,
  timeoutMillis: number,
  settle: (result: UpstreamResponse | UpstreamTimeout | UpstreamUnreachable) => void
): (() => void) => {
  const secure = url.protocol === "https:"
  const send = secure ? httpsRequest : httpRequest
  const request = send(url, {
    method: "POST",
    agent: secure ? httpsAgent : httpAgent,
    headers: { ...headers, "content-length": String(body.byteLength) }
  })
  let answered = false
  const abort = () => {
    if (!request.destroyed) request.destroy()
  }
  request.setTimeout(timeoutMillis, () => {
    if (!answered) {
      answered = true
      settle(new UpstreamTimeout({ afterMillis: timeoutMillis }))
    }
    request.destroy(new Error(`upstream idle for ${timeoutMillis} ms`))
  })
  request.on("error", (error) => {
    if (answered) return
    answered = true
    settle(new UpstreamUnreachable({ reason: error.message }))
  })
  request.on("response", (response) => {
    if (answered) {
      response.destroy()
      return
    }
    answered = true
    settle({ status: response.statusCode ?? 502, headers: response.headers, body: response, abort })
  })
  request.end(body)
  return abort
}

/** `sendUpstream` as an Effect; interrupting the wait for the head aborts the call. */
export const callUpstream = (
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: Uint8Array,
  timeoutMillis: number
): Effect.Effect<UpstreamResponse, UpstreamTimeout | UpstreamUnreachable> =>
  Effect.async((resume) => {
    const abort = sendUpstream(url, headers, body, timeoutMillis, (result) =>
      resume(
        result instanceof UpstreamTimeout || result instanceof UpstreamUnreachable
          ? Effect.fail(result)
          : Effect.succeed(result)
      )
    )
    return Effect.sync(abort)
  })
