/**
 * Human approval over HTTP: a tool registered with `approval` is deferred
 * (status `awaiting_approval`, with the approval request) while the approval
 * checker enforces; `POST /v1/approvals/{intent_id}/grant` lets exactly that
 * intent through (applied_grant and a lease) until the grant expires. In
 * `observe` mode the finding is recorded but the effect stays permit; an
 * environment's checker-mode override beats the workspace mode.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { CheckerModeOverrides, EnvironmentId, UpdateSettings } from "../../src/identity/Domain.js"
import { TIMESTAMP } from "../support/Formats.js"
import { clientAt, expectFailure, jsonAt } from "../support/Api.js"
import { call, expectValidation } from "../support/Raw.js"
import { createEnvironment, createKey, keyClient, tenant, type Tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { reasonsOf, upsertTool } from "./event-helpers.js"
import { type Action, createAgent, createPolicy, eventBody, propose, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"

const AGENT = "billing-bot"

const refund = (amount: number): Action => ({ operation: "issue_refund", params: { order_id: "o-1", amount } })

const setSettings = (owner: Tenant, body: typeof UpdateSettings.Type) =>
  owner.api.settings.updateSettings({ payload: body })

const setOverrides = (owner: Tenant, environmentId: EnvironmentId, body: typeof CheckerModeOverrides.Type) =>
  owner.api.environments.replaceCheckerModes({ path: { environment_id: environmentId }, payload: body })

/** `POST /v1/approvals/{intent_id}/grant` with `token` (typed). */
const grant = (
  base: string,
  token: string,
  intentId: string,
  body: { readonly note?: string; readonly ttl_seconds?: number } = {}
) =>
  Effect.flatMap(clientAt(base, { token }), (api) =>
    api.receipts.grantApproval({ path: { intent_id: intentId }, payload: body })
  )

/** The same grant sent raw: for ttl_seconds outside the contract's bounds. */
const grantRaw = (base: string, token: string, intentId: string, body: Record<string, unknown>) =>
  call(base, "POST", `/v1/approvals/${encodeURIComponent(intentId)}/grant`, { token, body })

/** A tenant whose `issue_refund` tool needs approval, with the approval checker in `mode`. */
const withApprovalTool = (base: string, mode: "off" | "observe" | "enforce", approval: unknown = true) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    yield* createAgent(base, owner, AGENT)
    yield* upsertTool(base, owner, { tool: "issue_refund", reversible: false, side_effect: "payment", approval })
    yield* upsertTool(base, owner, { tool: "lookup_order", reversible: true, side_effect: "none" })
    const settings = yield* setSettings(owner, { approval_checker_mode: mode })
    expect(settings.approval_checker_mode).toBe(mode)
    return owner
  })

layer(testServer("database"), SERVER_OPTIONS)("approval grants (database event log)", (it) => {
  describe("enforce", () => {
    it.effect("a tool needing approval is deferred awaiting_approval; a grant lets that intent (only) through", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* withApprovalTool(base, "enforce")

        const deferred = yield* propose(base, owner, AGENT, refund(20))
        expect(deferred.effect).toBe("defer")
        expect(deferred.status).toBe("awaiting_approval")
        expect(deferred.domain).toBe("approval")
        expect(deferred.approval).toMatchObject({ required: true, tool: "issue_refund", approvers: [] })
        expect(typeof jsonAt(deferred.approval, "reason")).toBe("string")
        expect(reasonsOf(deferred)).toEqual(["approval:issue_refund"])
        expect(deferred.applied_grant).toBeNull()
        expect(deferred.lease).toBeNull()
        // A tool without approval metadata is not held.
        expect((yield* propose(base, owner, AGENT, { operation: "lookup_order", params: { id: "o-1" } })).effect).toBe(
          "permit"
        )

        const before = Date.now()
        const granted = yield* grant(base, owner.jwt, deferred.intent_id, {
          note: "customer verified",
          ttl_seconds: 600
        })
        expect(granted.intent_id).toBe(deferred.intent_id)
        expect(granted.granted_by).toBe(owner.user_id)
        expect(granted.expires_at).toMatch(TIMESTAMP)
        expect(granted.created_at).toMatch(TIMESTAMP)
        const expiresIn = Date.parse(granted.expires_at) - before
        expect(expiresIn).toBeGreaterThan(590_000)
        expect(expiresIn).toBeLessThan(610_000)

        const permitted = yield* propose(base, owner, AGENT, refund(20))
        expect(permitted.intent_id).toBe(deferred.intent_id)
        expect(permitted.effect).toBe("permit")
        expect(permitted.status).toBe("decided")
        expect(permitted.findings).toEqual([])
        expect(permitted.approval).toBeNull()
        expect(permitted.applied_grant).toEqual({
          intent_id: deferred.intent_id,
          granted_by: owner.user_id,
          expires_at: granted.expires_at
        })
        expect(permitted.lease).toEqual({ expires_at: granted.expires_at })

        // Another intent (another amount) is still held.
        const other = yield* propose(base, owner, AGENT, refund(21))
        expect(other.intent_id).not.toBe(deferred.intent_id)
        expect(other.effect).toBe("defer")
        expect(other.status).toBe("awaiting_approval")
        expect(other.applied_grant).toBeNull()
      })
    )

    it.effect("a grant expires: after its ttl the intent is deferred again", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* withApprovalTool(base, "enforce")
        const deferred = yield* propose(base, owner, AGENT, refund(5))
        expect(deferred.effect).toBe("defer")
        yield* grant(base, owner.jwt, deferred.intent_id, { ttl_seconds: 1 })
        expect((yield* propose(base, owner, AGENT, refund(5))).effect).toBe("permit")
        yield* Effect.sleep("1200 millis")
        const expired = yield* propose(base, owner, AGENT, refund(5))
        expect(expired.effect).toBe("defer")
        expect(expired.status).toBe("awaiting_approval")
        expect(expired.applied_grant).toBeNull()
      })
    )

    it.effect("grants are workspace-scoped, need a person (a runtime key is 403) and a ttl within bounds", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* withApprovalTool(base, "enforce")
        const stranger = yield* withApprovalTool(base, "enforce")
        const deferred = yield* propose(base, owner, AGENT, refund(30))
        expect(deferred.effect).toBe("defer")

        // Another workspace cannot grant the same intent id: nothing there asked for it.
        yield* expectFailure(grant(base, stranger.jwt, deferred.intent_id), 404, "intent_not_found")
        expect((yield* propose(base, owner, AGENT, refund(30))).effect).toBe("defer")

        const key = yield* createKey(owner)
        const byKey = yield* keyClient(base, key)
        yield* expectFailure(
          byKey.receipts.grantApproval({ path: { intent_id: deferred.intent_id }, payload: {} }),
          403
        )
        yield* expectFailure(grant(base, "", deferred.intent_id), 401)
        expectValidation(yield* grantRaw(base, owner.jwt, deferred.intent_id, { ttl_seconds: 0 }), "ttl_seconds")
        expectValidation(
          yield* grantRaw(base, owner.jwt, deferred.intent_id, { ttl_seconds: 8 * 24 * 3600 }),
          "ttl_seconds"
        )
        expect((yield* propose(base, owner, AGENT, refund(30))).effect).toBe("defer")
      })
    )

    it.effect("only an intent a recorded decision deferred can be granted: a dry run's or a made-up id is 404", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* withApprovalTool(base, "enforce", { required: true, approvers: ["role:owner"] })
        // A dry run defers too and shows the intent id, but records no approval request with its approvers.
        const dryRun = yield* owner.api.events.evaluateEvent({ payload: eventBody(owner, AGENT, refund(40)) })
        expect([dryRun.effect, dryRun.status]).toEqual(["defer", "awaiting_approval"])
        yield* expectFailure(grant(base, owner.jwt, dryRun.intent_id), 404, "intent_not_found")
        yield* expectFailure(grant(base, owner.jwt, "int_made_up"), 404, "intent_not_found")
        expect((yield* propose(base, owner, AGENT, refund(40))).effect).toBe("defer")

        // Once the agent's own call asked, its approvers decide.
        const deferred = yield* propose(base, owner, AGENT, refund(40))
        expect(deferred.intent_id).toBe(dryRun.intent_id)
        yield* grant(base, owner.jwt, deferred.intent_id)
        expect((yield* propose(base, owner, AGENT, refund(40))).effect).toBe("permit")
      })
    )

    it.effect("the approval object carries the metadata's reason and approvers; a deny hides it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* withApprovalTool(base, "enforce", {
          required: true,
          approvers: ["finance-lead", 7],
          reason: "Refunds need finance."
        })
        const deferred = yield* propose(base, owner, AGENT, refund(40))
        expect(deferred.approval).toEqual({
          required: true,
          tool: "issue_refund",
          reason: "Refunds need finance.",
          approvers: ["finance-lead"]
        })
        yield* createPolicy(base, owner, "no-refund-tool", { target: "operation", value: "issue_refund" })
        const denied = yield* propose(base, owner, AGENT, refund(40))
        expect(denied.effect).toBe("deny")
        expect(denied.status).toBe("decided")
        expect(denied.approval).toBeNull()
        expect(reasonsOf(denied)).toEqual(["no-refund-tool", "approval:issue_refund"])
      })
    )
  })

  describe("modes", () => {
    it.effect("observe records the approval finding but the effect stays permit; off records nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const observed = yield* withApprovalTool(base, "observe")
        const decision = yield* propose(base, observed, AGENT, refund(10))
        expect(decision.effect).toBe("permit")
        expect(decision.status).toBe("decided")
        expect(decision.approval).toBeNull()
        expect(decision.findings).toHaveLength(1)
        expect(decision.findings[0]).toMatchObject({
          source: "approval",
          requirement_id: "approval:issue_refund",
          effect: "defer"
        })
        expect(decision.findings[0]!.evidence).toMatchObject({ observed_only: true })

        const off = yield* withApprovalTool(base, "off")
        const unchecked = yield* propose(base, off, AGENT, refund(10))
        expect(unchecked.effect).toBe("permit")
        expect(unchecked.findings).toEqual([])
      })
    )

    it.effect("an environment override beats the workspace mode; a null override inherits it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* withApprovalTool(base, "enforce")
        const relaxed = yield* createEnvironment(owner)
        const strict = yield* createEnvironment(owner)
        yield* setOverrides(owner, relaxed.id, { approval_checker_mode: "off" })
        yield* setOverrides(owner, strict.id, { approval_checker_mode: "enforce" })

        expect((yield* propose(base, owner, AGENT, refund(10))).effect).toBe("defer")
        const inRelaxed = yield* propose(base, owner, AGENT, refund(10), { environment_id: relaxed.id })
        expect(inRelaxed.effect).toBe("permit")
        expect(inRelaxed.findings).toEqual([])

        // Workspace off: the default environment lets the refund through; the strict one still holds it.
        yield* setSettings(owner, { approval_checker_mode: "off" })
        yield* until(
          Effect.map(propose(base, owner, AGENT, refund(11)), (decision) => expect(decision.effect).toBe("permit")),
          "30 seconds"
        )
        const inStrict = yield* propose(base, owner, AGENT, refund(11), { environment_id: strict.id })
        expect(inStrict.effect).toBe("defer")
        expect(inStrict.status).toBe("awaiting_approval")

        // Observe override in the relaxed environment, then back to inheriting (null) the workspace's off.
        yield* setOverrides(owner, relaxed.id, { approval_checker_mode: "observe" })
        yield* until(
          Effect.map(propose(base, owner, AGENT, refund(12), { environment_id: relaxed.id }), (decision) => {
            expect(decision.effect).toBe("permit")
            expect(decision.findings.map((finding) => finding.source)).toEqual(["approval"])
          }),
          "30 seconds"
        )
        yield* setOverrides(owner, relaxed.id, { approval_checker_mode: null })
        yield* until(
          Effect.map(propose(base, owner, AGENT, refund(12), { environment_id: relaxed.id }), (decision) => {
            expect(decision.effect).toBe("permit")
            expect(decision.findings).toEqual([])
          }),
          "30 seconds"
        )
        // Content checks do not depend on the approval mode.
        expect((yield* propose(base, owner, AGENT, reply("hello"), { environment_id: strict.id })).effect).toBe(
          "permit"
        )
      })
    )
  })
})
