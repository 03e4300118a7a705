/**
 * A loopback HTTP proxy in front of the test server that misbehaves on
 * script, as a load balancer or a lost connection would: each request takes
 * the next step of the script (then forwards as is once the script is
 * spent). Every request is recorded with its method, path and
 * `idempotency-key`.
 */
import { Effect } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export type ProxyStep =
  /** Forwards the request and relays the answer. */
  | { readonly kind: "forward" }
  /** Forwards the request (the service acts on it) but answers `status` instead: the answer was lost. */
  | { readonly kind: "forward-then"; readonly status: number; readonly retryAfter?: string }
  /** Answers `status` without forwarding. */
  | { readonly kind: "refuse"; readonly status: number; readonly retryAfter?: string }

export interface SeenRequest {
  readonly method: string
  readonly path: string
  readonly idempotencyKey: string | undefined
  /** `Date.now()` when it arrived. */
  readonly at: number
}

export interface FlakyProxy {
  readonly url: string
  readonly seen: Array<SeenRequest>
  /** Steps for the next requests, in order. */
  readonly script: (steps: ReadonlyArray<ProxyStep>) => void
}

const readBody = (request: IncomingMessage) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

const answer = (response: ServerResponse, status: number, retryAfter: string | undefined) => {
  const headers: Record<string, string> = { "content-type": "application/json" }
  if (retryAfter !== undefined) headers["retry-after"] = retryAfter
  response.writeHead(status, headers)
  response.end(JSON.stringify({ error: { code: "unavailable", message: "The proxy refused this attempt." } }))
}

/** The proxy in front of `target`, closed with the scope. */
export const flakyProxy = (target: string) =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<FlakyProxy & { readonly close: () => Promise<void> }> => {
      const steps: Array<ProxyStep> = []
      const seen: Array<SeenRequest> = []
      const server = createServer((request, response) => {
        const key = request.headers["idempotency-key"]
        seen.push({
          method: request.method ?? "GET",
          path: request.url ?? "/",
          idempotencyKey: typeof key === "string" ? key : undefined,
          at: Date.now()
        })
        const step = steps.shift() ?? { kind: "forward" }
        if (step.kind === "refuse") return answer(response, step.status, step.retryAfter)
        void readBody(request).then(async (body) => {
          const headers = Object.fromEntries(
            Object.entries(request.headers).filter(
              (entry): entry is [string, string] => typeof entry[1] === "string" && entry[0] !== "host"
            )
          )
          const forwarded = await fetch(`${target}${request.url ?? "/"}`, {
            method: request.method ?? "GET",
            headers,
            ...(body.length === 0 ? {} : { body })
          })
          const text = await forwarded.text()
          if (step.kind === "forward-then") return answer(response, step.status, step.retryAfter)
          response.writeHead(forwarded.status, {
            "content-type": forwarded.headers.get("content-type") ?? "text/plain"
          })
          response.end(text)
        })
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const { port } = server.address() as AddressInfo
      return {
        url: `http://127.0.0.1:${port}`,
        seen,
        script: (next) => steps.push(...next),
        close: () => new Promise<void>((resolve) => server.close(() => resolve()))
      }
    }),
    (proxy) => Effect.promise(() => proxy.close())
  )
