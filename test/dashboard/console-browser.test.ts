/**
 * The console pages in headless Chromium against the real service (database
 * event log, as the embedded default runs): a deny shows in the trace
 * explorer under its filter, its trace page highlights the policy's evidence
 * span in the content and verifies the receipt in the browser against
 * /.well-known/jwks.json, and a review posted from the page's form is what
 * the API then lists. Screenshots of each page go to test-results/console/.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { RunEvent } from "../../src/runs/Domain.js"
import { createAgent, createPolicy, createRun, proposeCall, reply } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { browser, lowContrastText, openPage, openSignedIn, run, screenshot, unlabelledControls } from "./browser.js"

const AGENT = "support-bot"
const DENIED = "Good news: I can give you a full refund today."

layer(testServer("database"), SERVER_OPTIONS)("console pages in headless Chromium", (it) => {
  it.scoped(
    "a deny in the explorer, its trace page with the highlighted span, a verified receipt and a posted review",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        yield* createPolicy(base, owner, "no-full-refund", { value: "full refund", description: "No refunds promised" })
        // A long chat: the deny answers its 25th event, the permit its 3rd.
        const chat = yield* createRun(base, owner, { agent_id: AGENT, kind: "chat_session" })
        const turns: Array<RunEvent> = []
        for (let i = 1; i <= 30; i++) {
          const kind = i % 2 === 1 ? "user_turn" : "agent_turn"
          turns.push(yield* owner.api.runs.appendRunEvent({ path: { id: chat.id }, payload: { kind, label: `turn ${i}` } }))
        }
        const inChat = (turn: number) => ({ run_id: chat.id, run_event_id: turns[turn - 1]!.id })
        const permitted = yield* proposeCall(base, owner, AGENT, reply("Your parcel ships tomorrow."), inChat(3))
        expect(permitted.effect).toBe("permit")
        const denied = yield* proposeCall(base, owner, AGENT, reply(DENIED), inChat(25))
        expect(denied.effect).toBe("deny")

        const chrome = yield* browser
        const { page, problems } = yield* openPage(chrome)
        yield* run(() => page.setViewportSize({ width: 1366, height: 900 }))
        yield* openSignedIn(page, `${base}/dashboard/traces`, owner)
        // Keyboard: on a fresh load the first Tab reaches the skip link, which moves focus to the content.
        yield* run(() => page.reload())
        yield* run(() => page.locator("#traces-body tr").first().waitFor())
        yield* run(() => page.keyboard.press("Tab"))
        expect(yield* run(() => page.evaluate("document.activeElement.textContent"))).toBe("Skip to content")
        yield* run(() => page.keyboard.press("Enter"))
        expect(yield* run(() => page.evaluate("document.activeElement.id"))).toBe("main")
        const row = (traceId: string) => page.locator(`#traces-body tr[data-trace-id="${traceId}"]`)
        yield* run(() => row(denied.trace_id).waitFor())
        yield* run(() => row(permitted.trace_id).waitFor())

        // The agent column names the deny's agent; clicking it filters the list by that agent.
        const agent = row(denied.trace_id).locator("[data-agent-id]")
        expect(yield* run(() => agent.textContent())).toBe(AGENT)
        yield* run(() => agent.click())
        yield* run(() => page.waitForURL(/agent_id=support-bot/))
        expect(yield* run(() => page.locator('#trace-filters [name="agent_id"]').inputValue())).toBe(AGENT)
        yield* run(() => row(denied.trace_id).waitFor())

        // Filtering by effect keeps the deny and drops the permit.
        yield* run(() => page.getByLabel("Effect").selectOption("deny"))
        yield* run(() => page.getByRole("button", { name: "Apply filters" }).click())
        yield* run(() => row(permitted.trace_id).waitFor({ state: "detached" }))
        expect(yield* run(() => row(denied.trace_id).getAttribute("data-effect"))).toBe("deny")
        expect(page.url()).toContain("effect=deny")
        // Full-text search over findings' reasons.
        yield* run(() => page.getByLabel("Search reasons").fill("no refunds"))
        yield* run(() => page.getByRole("button", { name: "Apply filters" }).click())
        yield* run(() => page.waitForURL(/q=no\+refunds/))
        yield* run(() => row(denied.trace_id).waitFor())
        yield* run(() => page.getByLabel("Search reasons").fill(""))

        // Live tail: a new deny appears on top without a reload.
        yield* run(() => page.getByLabel("Live tail (every 3 s)").check())
        const later = yield* proposeCall(base, owner, AGENT, reply("Fine, a full refund it is."))
        yield* run(() => row(later.trace_id).waitFor({ timeout: 15_000 }))
        expect(yield* run(() => page.locator("#traces-body tr").first().getAttribute("data-trace-id"))).toBe(
          later.trace_id
        )
        yield* run(() => page.getByLabel("Live tail (every 3 s)").uncheck())
        yield* screenshot(page, "traces")
        expect(yield* lowContrastText(page)).toEqual([])
        expect(yield* unlabelledControls(page)).toEqual([])

        yield* run(() => row(denied.trace_id).getByRole("link").click())
        yield* run(() => page.locator("#trace-view").waitFor())
        // The policy's span: "full refund" at its UTF-16 offsets in the content.
        const mark = page.locator("#content-view mark.evidence")
        yield* run(() => mark.first().waitFor())
        expect(yield* run(() => mark.allTextContents())).toContain("full refund")
        const finding = page.locator('[data-policy-id="no-full-refund"]')
        expect(yield* run(() => finding.textContent())).toContain("No refunds promised")
        const badge = page.locator('#receipt-badge[data-verified="true"]')
        yield* run(() => badge.waitFor({ timeout: 15_000 }))
        expect(yield* run(() => badge.textContent())).toContain("Verified")
        // The run: events 20..30 around the deny's 25th, that one marked; the decisions around it, the deny marked.
        const currentEvent = page.locator('#run-events li[aria-current="true"]')
        yield* run(() => currentEvent.waitFor())
        expect(yield* run(() => currentEvent.getAttribute("data-sequence"))).toBe("25")
        expect(yield* run(() => currentEvent.textContent())).toContain("turn 25 (this decision)")
        const shownSequences = yield* run(() =>
          page.locator("#run-events li").evaluateAll((items) => items.map((li) => Number(li.getAttribute("data-sequence"))))
        )
        expect(shownSequences).toEqual(Array.from({ length: 11 }, (_, i) => 20 + i))
        const currentTrace = page.locator('#run-traces li[aria-current="true"]')
        expect(yield* run(() => currentTrace.getAttribute("data-trace-id"))).toBe(denied.trace_id)
        expect(yield* run(() => page.locator(`#run-traces li[data-trace-id="${permitted.trace_id}"]`).count())).toBe(1)
        yield* screenshot(page, "trace")
        expect(yield* lowContrastText(page)).toEqual([])
        expect(yield* unlabelledControls(page)).toEqual([])

        // A review from the form is what the API lists for the trace.
        yield* run(() => page.getByLabel("Outcome").selectOption("false_positive"))
        yield* run(() => page.getByLabel("Reason codes (comma separated)").fill("policy_too_broad, tone"))
        yield* run(() => page.getByLabel("Note").fill("A goodwill refund was approved."))
        yield* run(() => page.getByRole("button", { name: "Post review" }).click())
        yield* run(() => page.locator("#reviews [data-review-id]").waitFor())
        const reviews = yield* owner.api.reviewEvents.listReviewEvents({
          path: { trace_id: denied.trace_id },
          urlParams: {}
        })
        expect(reviews.review_events.map((r) => [r.outcome, r.reason_codes, r.note])).toEqual([
          ["false_positive", ["policy_too_broad", "tone"], "A goodwill refund was approved."]
        ])
        expect(problems).toEqual([])
      }),
    120_000
  )
})
