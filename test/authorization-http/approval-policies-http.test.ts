/**
 * Approvals asked for by a policy of the `approval` family (a matching `defer`, as
 * `POST /v1/agents/{id}/guardrails/generate` creates them): the decision waits awaiting_approval,
 * and a person's grant lets that intent through while it lasts; a denial makes it answer deny.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt } from "../support/Api.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { reasonsOf } from "./event-helpers.js"
import { type Action, createAgent, createPolicy, propose } from "../support/Events.js"

const AGENT = "accounts-bot"

const deleteAccount = (id: string): Action => ({ operation: "delete_account", params: { account_id: id } })

/** A tenant whose `account-deletion` approval policy defers every `delete_account` call. */
const withApprovalPolicy = (base: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    yield* createAgent(base, owner, AGENT)
    yield* createPolicy(base, owner, "account-deletion", {
      family: "approval",
      action: "defer",
      severity: "medium",
      target: "operation",
      value: "delete_account"
    })
    return owner
  })

layer(testServer("database"), SERVER_OPTIONS)("approval policies", (it) => {
  describe("an approval-family policy", () => {
    it.effect("waits for approval; a grant lets that intent (only) through", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* withApprovalPolicy(base)
        const deferred = yield* propose(base, owner, AGENT, deleteAccount("a-1"))
        expect([deferred.effect, deferred.status]).toEqual(["defer", "awaiting_approval"])
        expect(reasonsOf(deferred)).toEqual(["account-deletion"])

        const api = yield* clientAt(base, { token: owner.jwt })
        const granted = yield* api.receipts.grantApproval({ path: { intent_id: deferred.intent_id }, payload: {} })

        const permitted = yield* propose(base, owner, AGENT, deleteAccount("a-1"))
        expect(permitted.intent_id).toBe(deferred.intent_id)
        expect([permitted.effect, permitted.status]).toEqual(["permit", "decided"])
        expect(permitted.applied_grant).toEqual({
          intent_id: deferred.intent_id,
          granted_by: owner.user_id,
          expires_at: granted.expires_at
        })
        expect(permitted.lease).toEqual({ expires_at: granted.expires_at })

        const other = yield* propose(base, owner, AGENT, deleteAccount("a-2"))
        expect([other.effect, other.status]).toEqual(["defer", "awaiting_approval"])
        expect(other.applied_grant).toBeNull()
      })
    )

    it.effect("denied, the intent answers deny from then on", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* withApprovalPolicy(base)
        const deferred = yield* propose(base, owner, AGENT, deleteAccount("a-3"))
        expect(deferred.effect).toBe("defer")

        const api = yield* clientAt(base, { token: owner.jwt })
        yield* api.approvals.denyApproval({ path: { intent_id: deferred.intent_id }, payload: { reason: "no" } })

        const denied = yield* propose(base, owner, AGENT, deleteAccount("a-3"))
        expect([denied.effect, denied.status]).toEqual(["deny", "decided"])
        expect(reasonsOf(denied)).toEqual(["account-deletion"])
        expect(denied.reason).toContain("no")
        expect(denied.approval).toBeNull()
      })
    )
  })
})
