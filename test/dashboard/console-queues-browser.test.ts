/**
 * The console's queues in headless Chromium (database event log, as the
 * embedded default runs): a decision deferred for approval is granted from
 * the approvals queue with a lease and the same intent is then permitted,
 * another is denied there and stays denied; a review queue made with the
 * page's form lists the workspace's denies with its progress beside the
 * human-review analytics; the overview shows the default view on a first
 * visit. Screenshots of each page go to test-results/console/.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createAgent, createPolicy, proposeCall, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { browser, lowContrastText, openPage, openSignedIn, run, screenshot, unlabelledControls } from "./browser.js"

const AGENT = "support-bot"
const sendMoney = (amount: number) => ({ operation: "send_money", params: { amount } })

layer(testServer("database"), SERVER_OPTIONS)("console queues in headless Chromium", (it) => {
  it.scoped(
    "a deferred decision granted from the queue is then permitted; a denied one stays denied",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        yield* owner.api.toolMetadata.upsertToolMetadata({
          payload: { tool: "send_money", reversible: false, side_effect: "payment", approval: true }
        })
        yield* owner.api.settings.updateSettings({ payload: { approval_checker_mode: "enforce" } })
        const toGrant = yield* proposeCall(base, owner, AGENT, sendMoney(40))
        const toDeny = yield* proposeCall(base, owner, AGENT, sendMoney(900))
        expect([toGrant.effect, toGrant.status, toDeny.effect]).toEqual(["defer", "awaiting_approval", "defer"])

        const chrome = yield* browser
        const { page, problems } = yield* openPage(chrome)
        yield* run(() => page.setViewportSize({ width: 1366, height: 900 }))
        yield* openSignedIn(page, `${base}/dashboard/approvals`, owner)
        const row = (intentId: string) => page.locator(`#approvals-body tr[data-intent-id="${intentId}"]`)
        yield* run(() => row(toGrant.intent_id).waitFor())
        yield* run(() => row(toDeny.intent_id).waitFor())
        // Oldest first.
        expect(yield* run(() => page.locator("#approvals-body tr").first().getAttribute("data-intent-id"))).toBe(
          toGrant.intent_id
        )
        yield* screenshot(page, "approvals")
        expect(yield* lowContrastText(page)).toEqual([])
        expect(yield* unlabelledControls(page)).toEqual([])

        yield* run(() => page.getByLabel(`Lease for ${toGrant.intent_id}`).selectOption({ label: "1 hour" }))
        yield* run(() => page.getByRole("button", { name: `Grant ${toGrant.intent_id}` }).click())
        yield* run(() => row(toGrant.intent_id).and(page.locator('[data-decided="grant"]')).waitFor())
        yield* run(() => page.getByLabel(`Note or reason for ${toDeny.intent_id}`).fill("Too large for a refund"))
        yield* run(() => page.getByRole("button", { name: `Deny ${toDeny.intent_id}` }).click())
        yield* run(() => row(toDeny.intent_id).and(page.locator('[data-decided="deny"]')).waitFor())

        // The same intents again: the granted one is permitted under its lease, the denied one is denied.
        const granted = yield* proposeCall(base, owner, AGENT, sendMoney(40))
        expect(granted.intent_id).toBe(toGrant.intent_id)
        expect(granted.effect).toBe("permit")
        const leaseMs = Date.parse(String((granted.lease as { expires_at: string }).expires_at)) - Date.now()
        expect(leaseMs).toBeGreaterThan(50 * 60_000)
        expect(leaseMs).toBeLessThanOrEqual(3600_000)
        expect((yield* proposeCall(base, owner, AGENT, sendMoney(900))).effect).toBe("deny")

        // Neither is pending any more.
        yield* run(() => page.getByRole("button", { name: "Refresh" }).click())
        yield* run(() => page.locator("#approvals-message").filter({ hasText: "Nothing here." }).waitFor())
        expect(problems).toEqual([])
      }),
    120_000
  )

  it.scoped(
    "a review queue made on the page lists the denies with progress; the overview shows the default view",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        yield* createPolicy(base, owner, "no-full-refund", { value: "full refund", description: "No refunds promised" })
        const denies = []
        for (const text of ["A full refund, sure.", "You get a full refund."]) {
          denies.push(yield* proposeCall(base, owner, AGENT, reply(text)))
        }
        yield* proposeCall(base, owner, AGENT, reply("Your parcel ships tomorrow."))
        yield* owner.api.reviewEvents.createReviewEvent({
          path: { trace_id: denies[0]!.trace_id },
          payload: { outcome: "accepted" }
        })

        const chrome = yield* browser
        const { page, problems } = yield* openPage(chrome)
        yield* run(() => page.setViewportSize({ width: 1366, height: 900 }))

        yield* openSignedIn(page, `${base}/dashboard/reviews`, owner)
        yield* run(() => page.locator("#analytics-summary dt").first().waitFor())
        yield* run(() => page.getByText("New queue").click())
        yield* run(() => page.locator("#create-queue").getByLabel("Name").fill("All denies"))
        yield* run(() => page.locator("#create-queue").getByLabel("Effect").selectOption("deny"))
        yield* run(() => page.getByRole("button", { name: "Create queue" }).click())
        yield* run(() => page.locator("#items-body tr").nth(1).waitFor())
        const listed = yield* run(() =>
          page.locator("#items-body tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-trace-id")))
        )
        expect(listed.sort()).toEqual(denies.map((d) => d.trace_id).sort())
        // Not reviewed first.
        expect(yield* run(() => page.locator("#items-body tr").first().getAttribute("data-reviewed"))).toBe("false")
        const progress = page.locator("#items-progress [data-total]")
        expect(yield* run(() => progress.getAttribute("data-total"))).toBe("2")
        expect(yield* run(() => progress.getAttribute("data-reviewed"))).toBe("1")
        yield* screenshot(page, "reviews")
        expect(yield* lowContrastText(page)).toEqual([])
        expect(yield* unlabelledControls(page)).toEqual([])

        // The overview shows the workspace's default view, made with the workspace (no setup).
        // LLM spend is drawn against the workspace's budget.
        yield* owner.api.settings.updateSettings({
          payload: { config: { llm_budget: { cap_minor: 500, currency: "usd", window: "day" } } }
        })
        // The three decisions have reached the aggregates the overview reads.
        yield* until(
          Effect.map(owner.api.analytics.queryAnalytics({ payload: { metric: "trace_count" } }), (result) =>
            expect(result.total).toBe(3)
          ),
          "20 seconds"
        )
        yield* run(() => page.goto(`${base}/dashboard`))
        expect(yield* run(() => page.locator("#view-select option:checked").textContent())).toBe("Overview (default)")
        const widgets = page.locator("#widgets [data-widget-id]")
        yield* run(() => widgets.first().waitFor())
        const ids = yield* run(() => widgets.evaluateAll((cards) => cards.map((c) => c.getAttribute("data-widget-id"))))
        for (const id of ids) {
          yield* run(() => page.locator(`[data-widget-id="${id}"][data-state="ready"]`).waitFor({ timeout: 20_000 }))
        }
        const byEffect = page.locator('[data-widget-id="decisions-by-effect"]')
        yield* run(() => byEffect.and(page.locator('[data-total="3"]')).waitFor({ timeout: 20_000 }))
        const budget = page.locator('[data-widget-id="llm-spend"] .budget')
        expect(yield* run(() => budget.textContent())).toContain("budget $5.00 per day")
        yield* screenshot(page, "overview")
        expect(yield* lowContrastText(page)).toEqual([])
        expect(yield* unlabelledControls(page)).toEqual([])
        expect(problems).toEqual([])
      }),
    120_000
  )
})
