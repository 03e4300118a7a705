/**
 * The approvals queue over HTTP: `GET /v1/approvals?status=pending|granted|denied`
 * (pending oldest first, cursor paging), `POST /v1/approvals/{intent_id}/deny`
 * (a denied intent then answers deny, stays denied, and cannot be granted),
 * and the approval's `approvers` enforced on grant and deny (403 for anyone
 * who matches none of `user:<id|username>`, `role:<role>`, bare username).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { type Action, createAgent, propose } from "../support/Events.js"
import { TIMESTAMP } from "../support/Formats.js"
import { createKey, INTERNAL_KEY, joinedAs, keyClient, tenant, type Tenant, type User } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { upsertTool } from "./event-helpers.js"

const AGENT = "billing-bot"

const refund = (amount: number): Action => ({ operation: "issue_refund", params: { order_id: "o-1", amount } })

/** A tenant with the agent registered, whose `issue_refund` tool needs approval (the approval checker enforcing). */
const withApprovalTool = (base: string, owner: Tenant, approval: unknown = true) =>
  Effect.gen(function* () {
    yield* createAgent(base, owner, AGENT)
    yield* upsertTool(base, owner, { tool: "issue_refund", reversible: false, side_effect: "payment", approval })
    yield* owner.api.settings.updateSettings({ payload: { approval_checker_mode: "enforce" } })
  })

const listed = (
  who: User,
  status?: "pending" | "granted" | "denied",
  extra: { limit?: number; cursor?: string } = {}
) => who.api.approvals.listApprovals({ urlParams: { ...(status === undefined ? {} : { status }), ...extra } })

const intents = (answer: { readonly approvals: ReadonlyArray<{ readonly intent_id: string }> }) =>
  answer.approvals.map((approval) => approval.intent_id)

const grant = (who: User, intentId: string) =>
  who.api.receipts.grantApproval({ path: { intent_id: intentId }, payload: { ttl_seconds: 600 } })

const deny = (who: User, intentId: string, reason?: string) =>
  who.api.approvals.denyApproval({ path: { intent_id: intentId }, payload: reason === undefined ? {} : { reason } })

layer(testServer("database", { INTERNAL_API_KEY: INTERNAL_KEY }), SERVER_OPTIONS)(
  "approvals queue (database event log)",
  (it) => {
    describe("queue", () => {
      it.effect("pending oldest first with paging; grant and deny move an intent; a denied intent answers deny", () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          yield* withApprovalTool(base, owner)
          expect((yield* listed(owner)).approvals).toEqual([])

          const first = yield* propose(base, owner, AGENT, refund(1))
          const second = yield* propose(base, owner, AGENT, refund(2))
          const third = yield* propose(base, owner, AGENT, refund(3))
          // Asking again does not move an intent back in the queue; its latest trace is shown.
          const again = yield* propose(base, owner, AGENT, refund(1))
          expect(again.intent_id).toBe(first.intent_id)
          for (const decision of [first, second, third, again]) expect(decision.status).toBe("awaiting_approval")

          const pending = yield* listed(owner)
          expect(intents(pending)).toEqual([first.intent_id, second.intent_id, third.intent_id])
          const head = pending.approvals[0]!
          expect(head).toMatchObject({
            status: "pending",
            trace_id: again.trace_id,
            agent_id: AGENT,
            environment_id: owner.defaultEnvironmentId,
            tool: "issue_refund",
            approvers: [],
            granted_by: null,
            expires_at: null,
            denied_by: null,
            deny_reason: null
          })
          expect(head.requested_at).toMatch(TIMESTAMP)
          expect(Date.parse(head.requested_at)).toBeLessThanOrEqual(Date.parse(pending.approvals[1]!.requested_at))

          const page = yield* listed(owner, "pending", { limit: 2 })
          expect(intents(page)).toEqual([first.intent_id, second.intent_id])
          const rest = yield* listed(owner, "pending", { limit: 2, cursor: page.next_cursor! })
          expect(intents(rest)).toEqual([third.intent_id])
          expect(rest.next_cursor).toBeUndefined()

          yield* grant(owner, second.intent_id)
          const granted = yield* listed(owner, "granted")
          expect(intents(granted)).toEqual([second.intent_id])
          expect(granted.approvals[0]).toMatchObject({ status: "granted", granted_by: owner.user_id })
          expect(granted.approvals[0]!.expires_at).toMatch(TIMESTAMP)

          const denied = yield* deny(owner, first.intent_id, "Refunds over policy.")
          expect(denied).toMatchObject({
            intent_id: first.intent_id,
            status: "denied",
            denied_by: owner.user_id,
            deny_reason: "Refunds over policy."
          })
          expect(intents(yield* listed(owner))).toEqual([third.intent_id])
          expect(intents(yield* listed(owner, "denied"))).toEqual([first.intent_id])

          // The same intent now answers deny, with the approver's reason.
          const after = yield* propose(base, owner, AGENT, refund(1))
          expect(after.intent_id).toBe(first.intent_id)
          expect(after.effect).toBe("deny")
          expect(after.status).toBe("decided")
          expect(after.findings.map((finding) => finding.requirement_id)).toEqual(["approval:issue_refund"])
          expect(after.findings[0]!.reason).toContain("Refunds over policy.")

          // It stays denied: denying again keeps the first denial; a grant is 409 and changes nothing.
          expect((yield* deny(owner, first.intent_id, "second thoughts")).deny_reason).toBe("Refunds over policy.")
          yield* expectFailure(grant(owner, first.intent_id), 409, "approval_denied")
          expect((yield* propose(base, owner, AGENT, refund(1))).effect).toBe("deny")

          // Denying a granted intent withdraws the grant.
          expect((yield* propose(base, owner, AGENT, refund(2))).effect).toBe("permit")
          yield* deny(owner, second.intent_id)
          expect((yield* propose(base, owner, AGENT, refund(2))).effect).toBe("deny")
          expect(intents(yield* listed(owner, "granted"))).toEqual([])
          expect(intents(yield* listed(owner, "denied"))).toEqual([second.intent_id, first.intent_id])
          // Other intents are untouched.
          expect((yield* propose(base, owner, AGENT, refund(3))).effect).toBe("defer")
        })
      )

      it.effect("under data_handling_mode redacted a denial's reason is kept redacted, as a review's note is", () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          yield* withApprovalTool(base, owner)
          yield* owner.api.settings.updateSettings({ payload: { data_handling_mode: "redacted" } })
          const deferred = yield* propose(base, owner, AGENT, refund(4))
          // Before, the reason was stored and answered as sent, whatever the mode.
          const denied = yield* deny(owner, deferred.intent_id, "Card 4111 1111 1111 1111 is on the fraud list.")
          expect(denied.deny_reason).toBe("Card [CARD] is on the fraud list.")
        })
      )

      it.effect("scoped to the workspace; an intent that never asked is 404; runtime keys read but cannot deny", () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          yield* withApprovalTool(base, owner)
          const deferred = yield* propose(base, owner, AGENT, refund(9))
          const stranger = yield* tenant(base)
          expect((yield* listed(stranger)).approvals).toEqual([])
          yield* expectFailure(deny(stranger, deferred.intent_id), 404, "intent_not_found")
          yield* expectFailure(deny(owner, "int_never_asked"), 404, "intent_not_found")

          const key = yield* keyClient(base, yield* createKey(owner))
          expect(intents(yield* key.approvals.listApprovals({ urlParams: {} }))).toEqual([deferred.intent_id])
          yield* expectFailure(
            key.approvals.denyApproval({ path: { intent_id: deferred.intent_id }, payload: {} }),
            403
          )
          expect((yield* propose(base, owner, AGENT, refund(9))).effect).toBe("defer")
        })
      )
    })

    describe("approvers", () => {
      it.effect("only the named approvers may grant or deny: user:<id>, a bare username, role:<role>; others 403", () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const admin = yield* joinedAs(base, owner, "admin")
          const named = yield* joinedAs(base, owner, "member")
          const outsider = yield* joinedAs(base, owner, "member")
          const approvers = [`user:${admin.user_id}`, named.username, "role:owner"]
          yield* withApprovalTool(base, owner, { required: true, approvers })

          const a = yield* propose(base, owner, AGENT, refund(10))
          const b = yield* propose(base, owner, AGENT, refund(11))
          const c = yield* propose(base, owner, AGENT, refund(12))
          expect(a.approval).toMatchObject({ approvers })
          expect((yield* listed(owner)).approvals[0]!.approvers).toEqual(approvers)

          yield* expectFailure(grant(outsider, a.intent_id), 403, "not_an_approver")
          yield* expectFailure(deny(outsider, a.intent_id), 403, "not_an_approver")
          expect((yield* propose(base, owner, AGENT, refund(10))).effect).toBe("defer")
          expect(intents(yield* listed(owner))).toEqual([a.intent_id, b.intent_id, c.intent_id])

          yield* grant(named, a.intent_id) // bare username
          expect((yield* propose(base, owner, AGENT, refund(10))).effect).toBe("permit")
          yield* deny(admin, b.intent_id) // user:<id>
          expect((yield* propose(base, owner, AGENT, refund(11))).effect).toBe("deny")
          yield* grant(owner, c.intent_id) // role:owner
          expect((yield* propose(base, owner, AGENT, refund(12))).effect).toBe("permit")
        })
      )

      it.effect("role:admin admits admins and owners but not members", () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          const admin = yield* joinedAs(base, owner, "admin")
          const member = yield* joinedAs(base, owner, "member")
          yield* withApprovalTool(base, owner, { required: true, approvers: ["role:admin"] })
          const a = yield* propose(base, owner, AGENT, refund(20))
          const b = yield* propose(base, owner, AGENT, refund(21))
          yield* expectFailure(grant(member, a.intent_id), 403, "not_an_approver")
          yield* grant(admin, a.intent_id)
          yield* grant(owner, b.intent_id)
          expect(intents(yield* listed(owner, "granted"))).toEqual([b.intent_id, a.intent_id])
        })
      )
    })
  }
)
