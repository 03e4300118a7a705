/** Headless Chromium (playwright-core) for the life of a scope, and the page's console problems. */
import { Effect } from "effect"
import { type Browser, chromium, type Page } from "playwright-core"
import { chromiumPath } from "../support/Chromium.js"

export const browser = Effect.acquireRelease(
  Effect.promise(() =>
    chromium.launch({
      executablePath: chromiumPath(),
      headless: true,
      // The tests run as root in a container, where Chromium's sandbox cannot start.
      args: ["--no-sandbox", "--disable-dev-shm-usage"]
    })
  ),
  (instance: Browser) => Effect.promise(() => instance.close())
)

/** A fresh page (own context: its own sessionStorage) that records console errors and failed requests. */
export const openPage = (instance: Browser) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const context = await instance.newContext()
      const page = await context.newPage()
      const problems: Array<string> = []
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(`console: ${message.text()}`)
      })
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`))
      return { page, problems, close: () => context.close() }
    }),
    ({ close }) => Effect.promise(close)
  )

export const run = <A>(work: () => Promise<A>) => Effect.promise(work)

export type { Page }
