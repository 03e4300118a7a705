/**
 * `GET /dashboard` is served beside the API: the page, its script and its
 * stylesheet answer 200 with their media types and a same-origin
 * Content-Security-Policy, are not swallowed by the API's 404, and other
 * paths under /dashboard still answer the API's 404 error body.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectError } from "../support/Raw.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

// Raw: the page and its assets are served beside the API, not part of its contract (no typed client method),
// and what is checked is their bytes and headers.

layer(testServer("database"), SERVER_OPTIONS)("dashboard page over HTTP", (it) => {
  describe("GET /dashboard", () => {
    it.effect("answers the HTML page with a CSP that allows only this origin and no inline code", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        for (const path of ["/dashboard", "/dashboard/"]) {
          const response = yield* call(base, "GET", path)
          expect(response.status, response.text).toBe(200)
          expect(response.headers.get("content-type")).toMatch(/^text\/html/)
          expect(response.text).toContain('<script type="module" src="/dashboard/overview.js"')
          expect(response.text).toContain('id="sign-in-form"')
          // No inline script or style for the CSP to need to allow.
          expect(response.text).not.toMatch(/<script>|<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=/)
          expect(response.headers.get("x-request-id")).toMatch(/\S/)
          const csp = response.headers.get("content-security-policy") ?? ""
          expect(csp).toContain("default-src 'none'")
          expect(csp).toContain("script-src 'self'")
          expect(csp).toContain("connect-src 'self'")
          expect(csp).toContain("frame-ancestors 'none'")
          expect(csp).not.toContain("unsafe-inline")
          expect(csp).not.toContain("unsafe-eval")
          expect(response.headers.get("x-content-type-options")).toBe("nosniff")
        }
      })
    )

    it.effect("serves its script and stylesheet with their media types", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const script = yield* call(base, "GET", "/dashboard/overview.js")
        expect(script.status).toBe(200)
        expect(script.headers.get("content-type")).toMatch(/^text\/javascript/)
        expect(script.text).toContain("/v1/analytics/query")
        const shell = yield* call(base, "GET", "/dashboard/shell.js")
        expect(shell.text).toContain("/v1/auth/login")
        const style = yield* call(base, "GET", "/dashboard/dashboard.css")
        expect(style.status).toBe(200)
        expect(style.headers.get("content-type")).toMatch(/^text\/css/)
      })
    )

    it.effect("other paths under /dashboard and other methods still answer the API's 404", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        expectError(yield* call(base, "GET", "/dashboard/secrets.txt"), 404, "route_not_found")
        expectError(yield* call(base, "GET", "/dashboardx"), 404, "route_not_found")
        const post = yield* call(base, "POST", "/dashboard", { body: {} })
        expect(post.status).toBe(404)
      })
    )
  })
})
