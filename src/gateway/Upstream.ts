/**
 * One request to an upstream provider over node:http(s) with keep-alive
 * agents. The answer is the response head and its body as a Node stream, so
 * the caller can pass it on chunk by chunk; `abort` destroys the request
 * (client gone, or done early). An idle socket (no head, or no body chunk, for `timeoutMillis`) ends
 * the call: before the head as `UpstreamTimeout`, after it as a body error.
 * Every new socket connects only where the outbound guard allows (its
 * `lookup` resolves once and pins the checked addresses; a blocked host is
 * `UpstreamRefused` before any connection). Redirects are not followed.
 */
import { Data, Either } from "effect"
import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { type ConnectOptions, type OutboundFailed, REFUSED_CODE } from "../platform/OutboundGuard.js"

export class UpstreamTimeout extends Data.TaggedError("UpstreamTimeout")<{ readonly afterMillis: number }> {}
export class UpstreamUnreachable extends Data.TaggedError("UpstreamUnreachable")<{ readonly reason: string }> {}
/** The outbound guard refused the provider's address (docs/outbound.md). */
export class UpstreamRefused extends Data.TaggedError("UpstreamRefused")<{ readonly reason: string }> {}

export type UpstreamFailure = UpstreamTimeout | UpstreamUnreachable | UpstreamRefused
/** The outbound guard's connect-time verdict for a URL (OutboundGuard.connectOptions). */
export type ConnectGuard = (url: URL) => Either.Either<ConnectOptions, OutboundFailed>

export const isUpstreamFailure = (result: UpstreamResponse | UpstreamFailure): result is UpstreamFailure =>
  result instanceof UpstreamTimeout || result instanceof UpstreamUnreachable || result instanceof UpstreamRefused

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
  guard: ConnectGuard,
  settle: (result: UpstreamResponse | UpstreamFailure) => void,
  // The MCP gateway also opens GET streams and ends sessions with DELETE.
  method: "POST" | "GET" | "DELETE" = "POST"
): (() => void) => {
  const connect = guard(url)
  if (Either.isLeft(connect)) {
    settle(new UpstreamRefused({ reason: connect.left.message }))
    return () => {}
  }
  const secure = url.protocol === "https:"
  const send = secure ? httpsRequest : httpRequest
  const request = send(url, {
    method,
    agent: secure ? httpsAgent : httpAgent,
    lookup: connect.right.lookup,
    headers: method === "GET" ? headers : { ...headers, "content-length": String(body.byteLength) }
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
  request.on("error", (error: NodeJS.ErrnoException) => {
    if (answered) return
    answered = true
    settle(
      error.code === REFUSED_CODE
        ? new UpstreamRefused({ reason: error.message })
        : new UpstreamUnreachable({ reason: error.message })
    )
  })
  request.on("response", (response) => {
    if (answered) {
      response.destroy()
      return
    }
    answered = true
    // Whoever reads the body attaches its listeners later (after a fiber hop): a body that breaks off before
    // then must not become an uncaught exception. They learn how it ended with stream.finished, which also
    // reports a stream that ended (or broke off) before they looked.
    response.on("error", () => {})
    settle({ status: response.statusCode ?? 502, headers: response.headers, body: response, abort })
  })
  request.end(body)
  return abort
}
