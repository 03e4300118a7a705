/**
 * The dashboard page: `GET /dashboard` and its script and stylesheet, served
 * beside the API on the HttpApi router (like `/docs`). The page is static;
 * it signs in with `POST /v1/auth/login` and reads the analytics endpoints
 * from the browser, so this module holds no state and no credentials.
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { readFileSync } from "node:fs"

/**
 * Same-origin only: the script and stylesheet are files of their own (no inline code), the page
 * calls only this service, and nothing may frame it or submit its form elsewhere.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

const SECURITY_HEADERS = {
  "content-security-policy": DASHBOARD_CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  // Small files: revalidate every time so a new deployment is picked up at once.
  "cache-control": "no-cache"
}

const assets = [
  { path: "/dashboard", file: "index.html", contentType: "text/html; charset=utf-8" },
  { path: "/dashboard/dashboard.js", file: "dashboard.js", contentType: "text/javascript; charset=utf-8" },
  { path: "/dashboard/dashboard.css", file: "dashboard.css", contentType: "text/css; charset=utf-8" }
] as const

/** An asset file beside this module; a missing one is a broken deployment, so it fails the start-up. */
const readAsset = (file: string) => Effect.sync(() => readFileSync(new URL(`./assets/${file}`, import.meta.url), "utf8"))

export const DashboardLive = HttpApiBuilder.Router.use((router) =>
  Effect.forEach(
    assets,
    (asset) =>
      Effect.flatMap(readAsset(asset.file), (body) =>
        router.get(
          asset.path,
          Effect.succeed(
            HttpServerResponse.text(body, { contentType: asset.contentType, headers: SECURITY_HEADERS })
          )
        )
      ),
    { discard: true }
  )
)
