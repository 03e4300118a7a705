/**
 * The console between sessions and with hostile data, in headless Chromium:
 * an agent's reply, tool name and params and a policy's description full of
 * markup show as text on the review-queue, approvals, trace explorer and
 * trace pages (no element made of them, no script
 * run); signing out ends the session at the service (a copy of its token
 * answers 401); after one user signs out, or their session ends, and another signs
 * in on the same tab, nothing of the first user's workspace stays on the
 * page (its queue's items, its trace).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt, expectFailure } from "../support/Api.js"
import { createAgent, createPolicy, proposeCall, reply } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { browser, openPage, openSignedIn, type Page, run, signInOnForm } from "./browser.js"

const AGENT = "support-bot"
// Each would run script or make an element if inserted as HTML, or break out of an attribute.
const HOSTILE_REPLY = `A full refund <img src=x onerror="window.__xss='reply'"><script>window.__xss='script'</script>`
const HOSTILE_TOOL = `pay<img src=x onerror="window.__xss='tool'">`
const HOSTILE_REASON = `No refunds "><svg onload="window.__xss='reason'"></svg><b>bold</b>`

/** What hostile markup would leave on the page: elements made of it, and whether any of its script ran. */
const injected = (page: Page) =>
  run(() =>
    page.evaluate(`({
      elements: document.querySelectorAll("#board img, #board svg[onload], #board b, #board script").length,
      ran: window.__xss ?? null
    })`)
  )

layer(testServer("database"), SERVER_OPTIONS)("console sessions and hostile data in headless Chromium", (it) => {
  it.scoped(
    "hostile text renders as text; another user signing in on the tab sees nothing of the first one's workspace",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const first = yield* tenant(base)
        const second = yield* tenant(base)
        yield* createAgent(base, first, AGENT)
        yield* createPolicy(base, first, "no-full-refund", { value: "full refund", description: HOSTILE_REASON })
        const denied = yield* proposeCall(base, first, AGENT, reply(HOSTILE_REPLY))
        expect(denied.effect).toBe("deny")
        // A tool call that waits for approval: its name and params are the agent's.
        yield* first.api.toolMetadata.upsertToolMetadata({
          payload: { tool: HOSTILE_TOOL, reversible: false, side_effect: "payment", approval: true }
        })
        yield* first.api.settings.updateSettings({ payload: { approval_checker_mode: "enforce" } })
        const deferred = yield* proposeCall(base, first, AGENT, {
          operation: HOSTILE_TOOL,
          params: { note: HOSTILE_REPLY }
        })
        expect(deferred.effect).toBe("defer")
        const queue = yield* first.api.reviewQueues.createReviewQueue({
          payload: { name: `Denies <i>of</i> ${first.username}`, rules: [{ effect: "deny" }] }
        })

        const chrome = yield* browser
        const { page, problems } = yield* openPage(chrome)

        // The queue's item: the finding's reason as the policy wrote it, as text.
        yield* openSignedIn(page, `${base}/dashboard/reviews`, first)
        const item = page.locator(`#items-body tr[data-trace-id="${denied.trace_id}"]`)
        yield* run(() => item.waitFor())
        expect(yield* run(() => item.locator("td").nth(2).textContent())).toContain(HOSTILE_REASON)
        expect(yield* run(() => page.locator("#items-title").textContent())).toBe(`Items of ${queue.name}`)
        expect(yield* injected(page)).toEqual({ elements: 0, ran: null })

        // The approvals queue and the trace explorer name the tool as the agent did, as text.
        yield* run(() => page.goto(`${base}/dashboard/approvals`))
        const approval = page.locator(`#approvals-body tr[data-intent-id="${deferred.intent_id}"]`)
        yield* run(() => approval.waitFor())
        expect(yield* run(() => approval.locator("code").textContent())).toBe(HOSTILE_TOOL)
        expect(yield* injected(page)).toEqual({ elements: 0, ran: null })
        yield* run(() => page.goto(`${base}/dashboard/traces`))
        const listed = page.locator(`#traces-body tr[data-trace-id="${deferred.trace_id}"]`)
        yield* run(() => listed.waitFor())
        expect(yield* run(() => listed.locator("td").nth(4).textContent())).toBe(HOSTILE_TOOL)
        expect(yield* injected(page)).toEqual({ elements: 0, ran: null })
        yield* run(() => page.goto(`${base}/dashboard/trace?id=${deferred.trace_id}`))
        yield* run(() => page.locator("#trace-view").waitFor())
        expect(yield* run(() => page.locator("#content-view").textContent())).toContain(JSON.stringify(HOSTILE_REPLY))
        expect(yield* injected(page)).toEqual({ elements: 0, ran: null })
        yield* run(() => page.goto(`${base}/dashboard/reviews`))
        yield* run(() => item.waitFor())

        // Signed out, then the second user signs in on the same tab: their workspace has no queue, and
        // the first one's items are gone with the first session.
        const signedOut = yield* run(() =>
          page.evaluate(`JSON.parse(sessionStorage.getItem("guardrail.dashboard.session")).jwt`)
        )
        yield* run(() => page.locator("#sign-out").click())
        yield* run(() => page.locator("#sign-in-form").waitFor())
        // The service ended that session: a copy of its token is worthless; the user's other sessions go on.
        const copied = yield* clientAt(base, { token: String(signedOut) })
        yield* expectFailure(copied.reviewQueues.listReviewQueues({ urlParams: {} }), 401, "session_ended")
        yield* first.api.reviewQueues.getReviewQueue({ path: { id: queue.id } })
        yield* signInOnForm(page, second)
        yield* run(() => page.locator("#queues-message").filter({ hasText: "No review queues yet" }).waitFor())
        expect(yield* run(() => page.locator("#items-card").isVisible())).toBe(false)
        expect(yield* run(() => page.locator(`[data-trace-id="${denied.trace_id}"]`).count())).toBe(0)
        expect(yield* run(() => page.locator("#board").textContent())).not.toContain(queue.name)

        // The trace page: the reply as decided and the reason, as text.
        yield* run(() => page.locator("#sign-out").click())
        yield* run(() => page.locator("#sign-in-form").waitFor())
        yield* run(() => page.goto(`${base}/dashboard/trace?id=${denied.trace_id}`))
        yield* signInOnForm(page, first)
        yield* run(() => page.locator("#trace-view").waitFor())
        yield* run(() => page.locator("#reviews li").first().waitFor())
        expect(yield* run(() => page.locator("#content-view pre").first().textContent())).toBe(HOSTILE_REPLY)
        expect(yield* run(() => page.locator("#findings").textContent())).toContain(HOSTILE_REASON)
        expect(yield* injected(page)).toEqual({ elements: 0, ran: null })

        // The session ends under the page (here: the service stops accepting it); the next request sends
        // the page to the form, and the second user signing in there sees no trace of the first one's.
        yield* run(() =>
          page.evaluate(
            `sessionStorage.setItem("guardrail.dashboard.session", JSON.stringify({ jwt: "ended", username: "x" }))`
          )
        )
        yield* run(() => page.locator("#review-form select[name=outcome]").selectOption({ index: 1 }))
        yield* run(() => page.locator("#review-form button").click())
        yield* run(() => page.locator("#sign-in-error").filter({ hasText: "session ended" }).waitFor())
        yield* signInOnForm(page, second)
        yield* run(() => page.locator("#trace-message").filter({ hasText: "No trace with this id" }).waitFor())
        expect(yield* run(() => page.locator("#trace-view").isVisible())).toBe(false)
        expect(yield* run(() => page.locator("#board").textContent())).not.toContain("A full refund")
        // The failed review post was refused with 401 (the ended session); the trace lookup then 404.
        expect(problems.filter((problem) => !/\b(401|404)\b/.test(problem))).toEqual([])
      }),
    120_000
  )
})
