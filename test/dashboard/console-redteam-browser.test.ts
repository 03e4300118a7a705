/**
 * The red-team report pages in headless Chromium on demo://local-agent: the
 * public page /r/{token} (no script, no sign-in) and the signed-in job page
 * draw the outcome and per-category charts whose numbers add up to the
 * report's totals, show the 0-10 risk score, each landed attack's transcript
 * and the comparison with an earlier job; an admin enables a hardening
 * candidate from the job page, and the next job is blocked where it landed. Screenshots go to test-results/console/.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Comparison, type Report } from "../../src/redteam/Domain.js"
import { DEMO, dispatch, report, waitForJob } from "../redteam/redteam-helpers.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { browser, lowContrastText, openPage, openSignedIn, type Page, run, screenshot, unlabelledControls } from "./browser.js"

/** What the charts on the page say: outcome bars and per-category landed/blocked. */
const chartNumbers = (page: Page) =>
  run(async () => {
    const outcomes = await page
      .locator("#outcome-chart [data-outcome] rect")
      .evaluateAll((rects) => rects.map((r) => [r.getAttribute("data-key"), Number(r.getAttribute("data-value"))]))
    const categories = await page.locator("#category-chart [data-category]").evaluateAll((groups) =>
      groups.map((g) => ({
        landed: Number(g.getAttribute("data-landed")),
        blocked: Number(g.getAttribute("data-blocked"))
      }))
    )
    return {
      outcome: Object.fromEntries(outcomes),
      landed: categories.reduce((sum, c) => sum + c.landed, 0),
      blocked: categories.reduce((sum, c) => sum + c.blocked, 0),
      categories: categories.length,
      score: await page.locator("#risk-score").getAttribute("data-risk-score"),
      transcripts: await page.locator(".landed-attack ol.transcript").count()
    }
  })

const expectCharts = (page: Page, shown: Report) =>
  Effect.gen(function* () {
    const a = shown.aggregates
    const numbers = yield* chartNumbers(page)
    expect(numbers.outcome).toEqual({ landed: a.landed, blocked: a.blocked, clean: a.clean, errored: a.errored })
    expect(numbers.landed).toBe(a.landed)
    expect(numbers.blocked).toBe(a.blocked)
    expect(numbers.categories).toBe(new Set(shown.findings.map((f) => f.category)).size)
    expect(numbers.score).toBe(String(a.risk_score))
    expect(numbers.transcripts).toBe(a.landed)
  })

layer(testServer("database"), SERVER_OPTIONS)("red-team report pages in headless Chromium", (it) => {
  it.scoped(
    "the shared and the signed-in report draw charts with the report's totals and the comparison",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const first = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
        yield* waitForJob(owner, first.id)
        const hardened = yield* owner.api.redteam.hardenJob({ path: { id: first.id }, payload: {} })
        const candidate = hardened.candidates[0]!.policy.id

        const chrome = yield* browser
        const { page, problems } = yield* openPage(chrome)
        yield* run(() => page.setViewportSize({ width: 1366, height: 900 }))

        // The signed-in job page: its charts, and the stored hardening candidates with an enable button.
        yield* openSignedIn(page, `${base}/dashboard/redteam?job=${first.id}`, owner)
        yield* run(() => page.locator("#category-chart").waitFor())
        yield* expectCharts(page, yield* report(owner, first.id))
        const rows = yield* run(() =>
          page
            .locator("#report tr[data-policy-id]")
            .evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-policy-id")))
        )
        expect(rows.sort()).toEqual(hardened.candidates.map((c) => c.policy.id).sort())
        yield* screenshot(page, "redteam-job")
        expect(yield* lowContrastText(page)).toEqual([])
        yield* run(() => page.evaluate(`document.getElementById("hardening-title").scrollIntoView()`))
        yield* screenshot(page, "redteam-hardening")
        expect(yield* unlabelledControls(page)).toEqual([])
        yield* run(() => page.getByRole("button", { name: `Enable ${candidate}` }).click())
        yield* run(() =>
          page
            .locator("#job-message")
            .filter({ hasText: `Policy ${candidate} enabled.` })
            .waitFor()
        )
        expect((yield* owner.api.policies.getPolicy({ path: { id: candidate } })).enabled).toBe(true)

        // The first job's public page lists the same candidates with their replay results, without buttons.
        const firstLink = yield* owner.api.redteamReports.createShareLink({ payload: { job_id: first.id } })
        yield* run(() => page.goto(`${base}${firstLink.html_path}`))
        yield* run(() => page.locator("#hardening-title").waitFor())
        expect(yield* run(() => page.locator("tr[data-policy-id]").count())).toBe(hardened.candidates.length)
        expect(yield* run(() => page.locator("button").count())).toBe(0)

        // With that policy enabled a second job is blocked where the first landed.
        const second = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
        yield* waitForJob(owner, second.id)
        const compared = yield* report(owner, second.id, first.id)
        expect(compared.aggregates.blocked).toBeGreaterThan(0)
        expect(compared.aggregates.landed).toBeGreaterThan(0)

        // The public page: no sign-in, no script.
        const link = yield* owner.api.redteamReports.createShareLink({
          payload: { job_id: second.id, compare_job_id: first.id }
        })
        yield* run(() => page.goto(`${base}${link.html_path}`))
        yield* run(() => page.locator("#category-chart").waitFor())
        yield* expectCharts(page, compared)
        expect(yield* run(() => page.locator("script").count())).toBe(0)
        const comparison = Schema.decodeUnknownSync(Comparison)(compared.comparison)
        for (const part of ["new", "fixed", "persisting"] as const) {
          const heading = yield* run(() => page.locator(`[data-comparison="${part}"] h3`).textContent())
          expect(heading).toContain(`(${comparison[part].length})`)
        }
        expect(comparison.fixed.length).toBeGreaterThan(0)
        yield* screenshot(page, "report-shared")
        expect(yield* lowContrastText(page)).toEqual([])

        // The signed-in page of the second job, compared on the page.
        yield* run(() => page.goto(`${base}/dashboard/redteam?job=${second.id}`))
        yield* run(() => page.locator("#category-chart").waitFor())
        yield* run(() => page.locator(`#compare-select option[value="${first.id}"]`).waitFor({ state: "attached" }))
        yield* run(() => page.getByLabel("Compare with").selectOption(first.id))
        yield* run(() => page.getByRole("button", { name: "Compare" }).click())
        yield* run(() => page.locator('[data-comparison="persisting"]').waitFor())
        yield* expectCharts(page, yield* report(owner, second.id, first.id))
        // The second job was never hardened: its hardening read is a 404 the page expects.
        expect(problems.filter((problem) => !problem.includes("404"))).toEqual([])
      }),
    180_000
  )
})
