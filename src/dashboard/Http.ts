/**
 * The console pages: `/dashboard` (overview) and its sibling pages (traces,
 * one trace, approvals, review queues, a red-team job), with their scripts
 * and stylesheet, served beside the API on the HttpApi router (like `/docs`).
 * Every page is the shared shell (`shell.html`: header, navigation, sign-in
 * form) around its own body fragment, put together once at start-up; the
 * scripts sign in with `POST /v1/auth/login` and read the API from the
 * browser, so this module holds no state and no credentials.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"
import { readdirSync, readFileSync } from "node:fs"

/** A policy that lets the page load `own` (script and fetch sources) from this origin and nothing else. */
const contentSecurityPolicy = (own: "'self'" | "'none'") =>
  [
    "default-src 'none'",
    `script-src ${own}`,
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${own}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join("; ")

/**
 * Same-origin only: the scripts and stylesheet are files of their own (no inline code), the pages
 * call only this service, and nothing may frame them or submit their forms elsewhere.
 */
export const DASHBOARD_CSP = contentSecurityPolicy("'self'")

export const SECURITY_HEADERS = {
  "content-security-policy": DASHBOARD_CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  // Small files: revalidate every time so a new deployment is picked up at once.
  "cache-control": "no-cache"
}

/**
 * The public shared report (`/r/{token}`, rendered by `assets/report-render.js`): it shows what a red-team
 * target replied, so no script may run there at all; and it is never stored by a cache, so a revoked or
 * expired link stops showing the report at once.
 */
export const SHARED_REPORT_HEADERS = {
  ...SECURITY_HEADERS,
  "content-security-policy": contentSecurityPolicy("'none'"),
  "cache-control": "no-store"
}

const HTML = "text/html; charset=utf-8"

/** An HTML page answered with `headers` (the security headers above). */
export const htmlPage = (body: string, headers: Readonly<Record<string, string>> = SECURITY_HEADERS) =>
  HttpServerResponse.text(body, { contentType: HTML, headers })

/** The pages: path, title, body fragment and entry module (all under `assets/`). */
export const PAGES = [
  { path: "/dashboard", page: "overview", title: "Overview" },
  { path: "/dashboard/traces", page: "traces", title: "Traces" },
  { path: "/dashboard/trace", page: "trace", title: "Trace" },
  { path: "/dashboard/approvals", page: "approvals", title: "Approvals" },
  { path: "/dashboard/reviews", page: "reviews", title: "Review queues" },
  { path: "/dashboard/redteam", page: "redteam", title: "Red-team job" }
] as const

const ASSETS = new URL("./assets/", import.meta.url)

/** An asset file beside this module; a missing one is a broken deployment, so it fails the start-up. */
const readAsset = (file: string) => readFileSync(new URL(file, ASSETS), "utf8")

/** The shell with the page's title, body and entry module filled in (the values are our own constants). */
const renderPage = (shell: string, page: (typeof PAGES)[number]) =>
  shell
    .replaceAll("%TITLE%", page.title)
    .replaceAll("%PAGE%", page.page)
    .replace("%BODY%", readAsset(`${page.page}.html`))

const MEDIA_TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8"
}

interface Served {
  readonly path: `/${string}`
  readonly body: string
  readonly contentType: string
}

/** Every script and stylesheet in `assets/`, served at `/dashboard/<file>`. */
const staticFiles = (): Array<Served> =>
  readdirSync(ASSETS).flatMap((file) => {
    const type = MEDIA_TYPES[file.slice(file.lastIndexOf(".") + 1)]
    return type === undefined ? [] : [{ path: `/dashboard/${file}`, body: readAsset(file), contentType: type }]
  })

const files = Effect.sync((): Array<Served> => {
  const shell = readAsset("shell.html")
  return [
    ...PAGES.map((page) => ({
      path: page.path,
      body: renderPage(shell, page),
      contentType: HTML
    })),
    ...staticFiles()
  ]
})

export const DashboardLive = HttpApiBuilder.Router.use((router) =>
  Effect.flatMap(files, (all) =>
    Effect.forEach(
      all,
      (file) =>
        router.get(
          file.path,
          Effect.succeed(
            HttpServerResponse.text(file.body, { contentType: file.contentType, headers: SECURITY_HEADERS })
          )
        ),
      { discard: true }
    )
  )
)
