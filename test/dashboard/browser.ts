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

/** Signs in on the page's form with the owner's password. */
export const signInOnForm = (page: Page, owner: { readonly username: string }) =>
  run(async () => {
    await page.locator("#username").fill(owner.username)
    await page.locator("#password").fill(plaintextPassword(owner))
    await page.locator("#sign-in-button").click()
  })

/** Opens `url`, signs in on its form with the owner's password and waits for the page's board. */
export const openSignedIn = (page: Page, url: string, owner: { readonly username: string }) =>
  Effect.gen(function* () {
    yield* run(() => page.goto(url))
    yield* signInOnForm(page, owner)
    yield* run(() => page.locator("#board").waitFor())
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

// ---- colour contrast (WCAG 2.x, level AA)

/** What the sampler reads of an element (typed here: the tests compile without the DOM library). */
interface SampledElement {
  readonly tagName: string
  readonly parentElement: SampledElement | null
  readonly childNodes: ArrayLike<{ readonly nodeType: number; readonly textContent: string | null }>
  getAttribute(name: string): string | null
  getBoundingClientRect(): {
    readonly width: number
    readonly height: number
    readonly right: number
    readonly bottom: number
  }
  checkVisibility(options: Record<string, boolean>): boolean
}
interface SampledStyle {
  readonly color: string
  readonly fill: string
  readonly backgroundColor: string
  readonly fontSize: string
  readonly fontWeight: string
}
interface SamplerGlobals {
  readonly document: { querySelectorAll(selector: string): ArrayLike<SampledElement> }
  getComputedStyle(element: SampledElement): SampledStyle
  readonly SVGElement: abstract new () => object
}

/** A visible element with its own text: its text colour, font, and the backgrounds from it up to the root. */
interface TextSample {
  readonly element: string
  readonly text: string
  readonly color: string
  readonly backgrounds: ReadonlyArray<string>
  readonly fontSizePx: number
  readonly fontWeight: number
}

/** Runs in the page: every visible element with direct (non-blank) text, as a `TextSample`. */
const sampleText = (): Array<TextSample> => {
  const page = globalThis as unknown as SamplerGlobals
  const samples: Array<TextSample> = []
  for (const element of Array.from(page.document.querySelectorAll("body *"))) {
    const text = Array.from(element.childNodes)
      .filter((node) => node.nodeType === 3)
      .map((node) => node.textContent ?? "")
      .join("")
      .trim()
    if (text === "") continue
    const box = element.getBoundingClientRect()
    // Off-screen (the skip link until focused), empty or hidden: not seen.
    if (box.width === 0 || box.height === 0 || box.right <= 0 || box.bottom <= 0) continue
    if (!element.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue
    const style = page.getComputedStyle(element)
    const backgrounds: Array<string> = []
    for (let at: SampledElement | null = element; at !== null; at = at.parentElement) {
      backgrounds.push(page.getComputedStyle(at).backgroundColor)
    }
    const tag = element.tagName.toLowerCase()
    const id = element.getAttribute("id")
    const classes = (element.getAttribute("class") ?? "").trim().split(/\s+/).filter(Boolean)
    samples.push({
      element: `${tag}${id ? `#${id}` : ""}${classes.map((name) => `.${name}`).join("")}`,
      text: text.slice(0, 40),
      // SVG text is painted with fill, not color.
      color: element instanceof page.SVGElement ? style.fill : style.color,
      backgrounds,
      fontSizePx: parseFloat(style.fontSize),
      fontWeight: Number(style.fontWeight)
    })
  }
  return samples
}

type Rgba = readonly [number, number, number, number]
const WHITE: Rgba = [255, 255, 255, 1]

/** A computed `rgb()`/`rgba()` value; undefined for anything else (none, url(), other colour spaces). */
const parseColor = (value: string): Rgba | undefined => {
  const parts = /^rgba?\(([^)]*)\)$/
    .exec(value.trim())?.[1]
    ?.split(/[\s,/]+/)
    .filter(Boolean)
    .map(Number)
  if (parts === undefined || parts.length < 3 || parts.some(Number.isNaN)) return undefined
  return [parts[0]!, parts[1]!, parts[2]!, parts[3] ?? 1]
}

/** `top` painted over the opaque `bottom` (source-over). */
const over = (top: Rgba, bottom: Rgba): Rgba => {
  const mix = (i: number) => top[i]! * top[3] + bottom[i]! * (1 - top[3])
  return [mix(0), mix(1), mix(2), 1]
}

/** The colour behind the text: the backgrounds up to the first opaque one, composited over white. */
const effectiveBackground = (layers: ReadonlyArray<Rgba>): Rgba => {
  const opaque = layers.findIndex((layer) => layer[3] >= 1)
  const seen = opaque < 0 ? layers : layers.slice(0, opaque + 1)
  return seen.reduceRight<Rgba>((below, layer) => over(layer, below), WHITE)
}

/** WCAG 2.x relative luminance of an opaque sRGB colour. */
const luminance = ([r, g, b]: Rgba) => {
  const linear = (channel: number) => {
    const c = channel / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }
  return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)
}

const contrastRatio = (a: Rgba, b: Rgba) => {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x)
  return (light! + 0.05) / (dark! + 0.05)
}

/** Large text (18 pt, or 14 pt bold) needs 3:1, other text 4.5:1. */
const requiredRatio = (sample: TextSample) =>
  sample.fontSizePx >= 24 || (sample.fontSizePx >= 18.66 && sample.fontWeight >= 700) ? 3 : 4.5

export interface ContrastFailure {
  readonly element: string
  readonly text: string
  readonly color: string
  readonly background: string
  readonly ratio: number
  readonly required: number
}

/**
 * Visible text below WCAG 2.x AA contrast (4.5:1, large text 3:1) against its effective background:
 * the first non-transparent background-color up its ancestors (translucent ones composited), the page
 * white beneath. Background images and opacity are not considered. An unreadable colour is a failure.
 */
export const lowContrastText = (page: Page) =>
  run(async () => {
    const failures: Array<ContrastFailure> = []
    for (const sample of await page.evaluate(sampleText)) {
      const layers = sample.backgrounds.map((value) => parseColor(value) ?? WHITE)
      const background = effectiveBackground(layers)
      const color = parseColor(sample.color)
      const ratio = color === undefined ? 0 : contrastRatio(color[3] >= 1 ? color : over(color, background), background)
      const required = requiredRatio(sample)
      if (ratio < required) {
        failures.push({
          element: sample.element,
          text: sample.text,
          color: sample.color,
          background: `rgb(${background.slice(0, 3).map(Math.round).join(", ")})`,
          ratio: Math.round(ratio * 100) / 100,
          required
        })
      }
    }
    return failures
  })
