/**
 * Requests sent so the fast lane takes them (Content-Length) or the full request pipeline does
 * (chunked, no Content-Length); see src/http/Lane.ts.
 */
import { Effect } from "effect"
import { request as httpRequest } from "node:http"

export interface Answer {
  readonly status: number
  readonly requestId: string | undefined
  readonly body: Record<string, unknown>
}

/** POSTs `text` with Content-Length (lane) or chunked (pipeline), as Node's client sends them. */
export const post = (
  base: string,
  path: string,
  text: string,
  options: { token?: string; chunked: boolean; requestId?: string }
) =>
  Effect.promise(
    () =>
      new Promise<Answer>((resolve, reject) => {
        const headers: Record<string, string> = { "content-type": "application/json" }
        if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`
        if (options.requestId !== undefined) headers["x-request-id"] = options.requestId
        if (!options.chunked) headers["content-length"] = String(Buffer.byteLength(text))
        const outgoing = httpRequest(`${base}${path}`, { method: "POST", headers }, (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 0,
              requestId: response.headers["x-request-id"] as string | undefined,
              body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>
            })
          )
        })
        outgoing.on("error", reject)
        if (options.chunked) {
          // Two writes without a Content-Length: Node sends Transfer-Encoding: chunked.
          outgoing.write(text.slice(0, 1))
          outgoing.end(text.slice(1))
        } else {
          outgoing.end(text)
        }
      })
  )

/** Both ways; answers [lane, pipeline]. */
export const bothWays = (base: string, path: string, text: string, token?: string) =>
  Effect.all([
    post(base, path, text, { chunked: false, ...(token === undefined ? {} : { token }) }),
    post(base, path, text, { chunked: true, ...(token === undefined ? {} : { token }) })
  ])
