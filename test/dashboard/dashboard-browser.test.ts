/**
 * The dashboard in headless Chromium against the real service (Kafka event
 * log, stream workers, aggregates): a user's decisions and run events reach
 * the analytics aggregates; a saved view with one widget of each chart type
 * is created through the API; the page signs in with the user's password,
 * the view is picked from the list, and every widget draws its chart with
 * the total the query API reports (5 decisions: 3 permit, 2 deny; 4 run
 * events); a new decision appears after Refresh. The session survives a
 * reload (sessionStorage), a wrong password is refused on the page, a
 * session the service rejects returns to the form, signing out clears the session, the page's own SHA-256 (for plain
 * http, where crypto.subtle is missing) matches, and the page runs under its
 * Content-Security-Policy without a violation.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createAgent, proposeCall, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { browser, lowContrastText, openPage, type Page, run } from "./browser.js"

const AGENT = "support-bot"

/** The plaintext behind the password digest `tenant()` signs up with (see `signUp` in test/support/Tenants.ts). */
const plaintextPassword = (owner: Tenant) => `${owner.username} secret`

const OVERVIEW_WIDGETS = [
  {
    id: "decisions",
    title: "Decisions",
    metric: "trace_count",
    chart_type: "big_number",
    layout: { x: 0, y: 0, w: 4, h: 1 }
  },
  {
    id: "by-effect",
    title: "Decisions by effect",
    metric: "trace_count",
    chart_type: "bar",
    group_by: "effect",
    layout: { x: 4, y: 0, w: 8, h: 2 }
  },
  { id: "effect-share", title: "Effect share", metric: "trace_count", chart_type: "pie", group_by: "effect" },
  { id: "run-events", title: "Run events", metric: "run_event_count", chart_type: "line" },
  { id: "denies", title: "Denies by agent", metric: "deny_count", chart_type: "table", group_by: "agent_id" }
]

/** POST /v1/analytics/query through the API, as the page will ask (no range: everything so far). */
const queryTotal = (owner: Tenant, metric: string) => owner.api.analytics.queryAnalytics({ payload: { metric } })

/** A reply by the support agent, decided in the owner's workspace and default environment. */
const propose = (base: string, owner: Tenant, content: string) => proposeCall(base, owner, AGENT, reply(content))

/** 3 permits and 2 denies by the support agent, and a run with 4 events. */
const produceActivity = (base: string, owner: Tenant) =>
  Effect.gen(function* () {
    yield* createAgent(base, owner, AGENT)
    const effects: Array<string> = []
    for (const text of ["Your order ships tomorrow.", "I promise a full refund.", "Tracking is on its way."]) {
      effects.push((yield* propose(base, owner, text)).effect)
    }
    for (const text of ["Sure, a full refund today.", "Thanks for waiting."]) {
      effects.push((yield* propose(base, owner, text)).effect)
    }
    expect(effects.sort()).toEqual(["deny", "deny", "permit", "permit", "permit"])
    const created = yield* owner.api.runs.createRun({ payload: { agent_id: AGENT, kind: "chat_session" } })
    for (const kind of ["user_turn", "agent_turn", "tool_call", "tool_result"] as const) {
      yield* owner.api.runs.appendRunEvent({ path: { id: created.id }, payload: { kind } })
    }
  })

const signInOnPage = (page: Page, username: string, password: string) =>
  run(async () => {
    await page.locator("#username").fill(username)
    await page.locator("#password").fill(password)
    await page.locator("#sign-in-button").click()
  })

const widget = (page: Page, id: string) => page.locator(`[data-widget-id="${id}"]`)

/** Waits for the widget to be drawn; answers its total as the page shows it and its data attribute. */
const drawnWidget = (page: Page, id: string) =>
  run(async () => {
    const card = widget(page, id)
    await card.and(page.locator('[data-state="ready"]')).waitFor({ timeout: 15_000 })
    return {
      total: await card.getAttribute("data-total"),
      shownTotal: (await card.locator(".total strong").textContent()) ?? ""
    }
  })

layer(testServer("kafka"), SERVER_OPTIONS)("dashboard in headless Chromium", (it) => {
  it.scoped(
    "signs in, picks a saved view and draws each widget with the query API's total",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* produceActivity(base, owner)

        const overview = yield* owner.api.analytics.createView({
          payload: { name: "Ops overview", config: { filters: [], widgets: OVERVIEW_WIDGETS } }
        })
        // The default view is another one, so the test has to pick the overview on the page.
        yield* owner.api.analytics.createView({
          payload: {
            name: "Budget",
            is_default: true,
            config: {
              filters: [],
              widgets: [{ id: "cost", title: "LLM cost", metric: "llm_cost_minor", chart_type: "big_number" }]
            }
          }
        })

        // The stream worker has folded every event into the aggregates.
        yield* until(
          Effect.gen(function* () {
            expect((yield* queryTotal(owner, "trace_count")).total).toBe(5)
            expect((yield* queryTotal(owner, "run_event_count")).total).toBe(4)
            expect((yield* queryTotal(owner, "deny_count")).total).toBe(2)
          }),
          "20 seconds"
        )

        const chrome = yield* browser
        const { page, problems } = yield* openPage(chrome)
        yield* run(() => page.goto(`${base}/dashboard`))
        yield* run(() => page.locator("#sign-in-form").waitFor())
        // Over plain http to a non-local host the page has no crypto.subtle and hashes the password itself.
        const digest = yield* run(() =>
          page.evaluate(
            `import("/dashboard/session.js").then((m) => m.sha256Fallback(new TextEncoder().encode(${JSON.stringify(plaintextPassword(owner))})))`
          )
        )
        expect(digest).toBe(owner.password)

        // A wrong password is refused on the page.
        yield* signInOnPage(page, owner.username, "not the password")
        yield* run(() => page.locator("#sign-in-error").filter({ hasText: "Wrong username or password" }).waitFor())
        expect(yield* run(() => page.locator("#board").isVisible())).toBe(false)
        // The sign-in form and its error are readable (WCAG AA contrast).
        expect(yield* lowContrastText(page)).toEqual([])

        yield* signInOnPage(page, owner.username, plaintextPassword(owner))
        yield* run(() => page.locator("#board").waitFor())
        // The board shows before the view list has loaded; wait for all three views to be listed.
        yield* run(() => page.locator("#view-select option").nth(2).waitFor({ state: "attached" }))
        const options = yield* run(() => page.locator("#view-select option").allTextContents())
        // Overview is the view every workspace starts with (src/analytics/DefaultView.ts).
        expect(options.sort()).toEqual(["Budget (default)", "Ops overview", "Overview"])
        // The default view is shown first.
        yield* drawnWidget(page, "cost")

        yield* run(() => page.locator("#view-select").selectOption({ label: "Ops overview" }))
        const decisions = yield* drawnWidget(page, "decisions")
        expect(decisions).toEqual({ total: "5", shownTotal: "5" })
        expect(yield* run(() => widget(page, "decisions").locator(".big-number").textContent())).toBe("5")

        const byEffect = yield* drawnWidget(page, "by-effect")
        expect(byEffect.total).toBe("5")
        const bars = yield* run(() =>
          widget(page, "by-effect")
            .locator("svg rect[data-label]")
            .evaluateAll((rects) =>
              rects.map((rect) => [rect.getAttribute("data-label"), rect.getAttribute("data-value")])
            )
        )
        expect(Object.fromEntries(bars)).toEqual({ permit: "3", deny: "2" })

        const share = yield* drawnWidget(page, "effect-share")
        expect(share.total).toBe("5")
        expect(yield* run(() => widget(page, "effect-share").locator("svg path[data-label]").count())).toBe(2)

        const runEvents = yield* drawnWidget(page, "run-events")
        expect(runEvents).toEqual({ total: "4", shownTotal: "4" })
        expect(yield* run(() => widget(page, "run-events").locator("svg polyline").count())).toBe(1)
        const linePoints = yield* run(() =>
          widget(page, "run-events")
            .locator("svg circle[data-value]")
            .evaluateAll((dots) => dots.map((dot) => Number(dot.getAttribute("data-value"))))
        )
        expect(linePoints.reduce((sum, value) => sum + value, 0)).toBe(4)

        const denies = yield* drawnWidget(page, "denies")
        expect(denies.total).toBe("2")
        const rows = yield* run(() => widget(page, "denies").locator("tbody tr").allTextContents())
        expect(rows).toEqual([`${AGENT}2`])
        // Every chart type drawn: its labels, totals and legends are readable.
        expect(yield* lowContrastText(page)).toEqual([])

        // A new decision reaches the aggregates; Refresh redraws the charts in place with it.
        yield* propose(base, owner, "One more order update.")
        yield* until(
          Effect.map(queryTotal(owner, "trace_count"), (result) => expect(result.total).toBe(6)),
          "20 seconds"
        )
        yield* run(() => page.locator("#refresh").click())
        yield* run(() => widget(page, "decisions").and(page.locator('[data-total="6"]')).waitFor({ timeout: 15_000 }))
        yield* run(() => widget(page, "by-effect").and(page.locator('[data-total="6"]')).waitFor({ timeout: 15_000 }))
        const barsAfter = yield* run(() =>
          widget(page, "by-effect")
            .locator("svg rect[data-label]")
            .evaluateAll((rects) =>
              rects.map((rect) => [rect.getAttribute("data-label"), rect.getAttribute("data-value")])
            )
        )
        expect(Object.fromEntries(barsAfter)).toEqual({ permit: "4", deny: "2" })

        // The session and the chosen view survive a reload; the JWT stays in sessionStorage only.
        yield* run(() => page.reload())
        expect(yield* drawnWidget(page, "decisions")).toEqual({ total: "6", shownTotal: "6" })
        expect(yield* run(() => page.locator("#view-select").inputValue())).toBe(overview.id)
        const storage = yield* run(() =>
          page.evaluate("({ session: sessionStorage.length, local: localStorage.length, cookie: document.cookie })")
        )
        expect(storage).toEqual({ session: 2, local: 0, cookie: "" })

        // A session the service no longer accepts sends the page back to the form.
        yield* run(() =>
          page.evaluate(
            `sessionStorage.setItem("guardrail.dashboard.session", JSON.stringify({ jwt: "expired", username: "x" }))`
          )
        )
        yield* run(() => page.reload())
        yield* run(() => page.locator("#sign-in-error").filter({ hasText: "session ended" }).waitFor())
        expect(yield* run(() => page.locator("#board").isVisible())).toBe(false)

        yield* signInOnPage(page, owner.username, plaintextPassword(owner))
        yield* drawnWidget(page, "decisions")
        yield* run(() => page.locator("#sign-out").click())
        yield* run(() => page.locator("#sign-in-form").waitFor())
        expect(yield* run(() => page.evaluate("sessionStorage.length"))).toBe(0)

        // Only the expected failed login may appear in the console; nothing was refused by the CSP.
        expect(problems.filter((problem) => !problem.includes("401"))).toEqual([])
      }),
    // A browser, a dozen page loads and the aggregates catching up: generous on a busy machine.
    120_000
  )
})
