/**
 * What Node's HTTP parser refuses before any handler sees a request (a
 * request line and headers past 16 KiB, bytes that are not HTTP) is answered
 * with the conventions' error body like any other 4xx, and the connection is
 * closed; the service goes on answering. (A request that arrives too slowly,
 * 408 `request_timeout`, is in test/gateway/stream-limits.test.ts.)
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, untilServerCloses } from "../support/Raw.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

/** The status line and the JSON body of a raw answer. */
const parse = (raw: string) => {
  const [head = "", body = ""] = raw.split("\r\n\r\n")
  return { statusLine: head.split("\r\n")[0], headers: head.toLowerCase(), body: JSON.parse(body) as unknown }
}

layer(testServer("database"), SERVER_OPTIONS)("requests Node's parser refuses", (it) => {
  it.effect("headers past 16 KiB: 431 headers_too_large; not HTTP: 400 malformed_request; both as JSON", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const tooLarge = parse(
        yield* untilServerCloses(
          base,
          `GET /v1/runs?agent_id=${"x".repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`
        )
      )
      expect(tooLarge.statusLine).toBe("HTTP/1.1 431 Request Header Fields Too Large")
      expect(tooLarge.headers).toContain("content-type: application/json")
      expect(tooLarge.body).toEqual({
        error: { code: "headers_too_large", message: "The request line and headers exceed the 16 KiB limit." }
      })

      const garbage = parse(yield* untilServerCloses(base, "HELLO THERE\r\n\r\n"))
      expect(garbage.statusLine).toBe("HTTP/1.1 400 Bad Request")
      expect(garbage.body).toEqual({
        error: { code: "malformed_request", message: "The request is not valid HTTP/1.1." }
      })

      expect((yield* call(base, "GET", "/healthz")).status).toBe(200)
    })
  )
})
