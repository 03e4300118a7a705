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

/** The plaintext behind the password digest `tenant()` signs up with (see `signUp` in test/support/Tenants.ts). */
export const plaintextPassword = (owner: { readonly username: string }) => `${owner.username} secret`

/** Opens `url`, signs in on its form with the owner's password and waits for the page's board. */
export const openSignedIn = (page: Page, url: string, owner: { readonly username: string }) =>
  run(async () => {
    await page.goto(url)
    await page.locator("#username").fill(owner.username)
    await page.locator("#password").fill(plaintextPassword(owner))
    await page.locator("#sign-in-button").click()
    await page.locator("#board").waitFor()
  })

/** A screenshot of what a laptop screen shows, under test-results/ (gitignored), named after the page. */
export const screenshot = (page: Page, name: string) =>
  run(() => page.screenshot({ path: `test-results/console/${name}.png` }))

/** Visible form controls without a label (neither a <label> nor aria-label): an accessibility check. */
export const unlabelledControls = (page: Page) =>
  run(() =>
    page
      .locator("input:visible, select:visible, textarea:visible, button:visible")
      .evaluateAll((controls) =>
        controls
          .filter(
            (control) =>
              ((control as unknown as { labels?: ArrayLike<unknown> | null }).labels?.length ?? 0) === 0 &&
              !control.getAttribute("aria-label") &&
              (control.textContent ?? "").trim() === ""
          )
          .map((control) => control.outerHTML.slice(0, 80))
      )
  )
