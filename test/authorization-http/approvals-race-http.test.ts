/**
 * Two reviewers deciding one approval at once: a grant that found the intent
 * not denied, still writing while a denial is made, lands before that
 * denial withdraws it, so the denial wins outright: no grant is left beside
 * it (the queue, the audit log and the decisions agree) and the next grant
 * is 409. The grant is held mid-write by another session's uncommitted grant
 * row of the same intent, so the interleaving is the same on every run.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Fiber, Option } from "effect"
import { expectFailure } from "../support/Api.js"
import { createAgent, propose } from "../support/Events.js"
import { lockedRows, queryDatabase, serviceWaitsOnLocks } from "../support/Database.js"
import { until } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { refundsNeedApproval } from "./event-helpers.js"

const AGENT = "billing-bot"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("approvals decided at once", (it) => {
  it.effect("a grant racing a denial lands before the denial withdraws it; the intent stays denied", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, AGENT)
      yield* refundsNeedApproval(base, owner)
      const asked = yield* propose(base, owner, AGENT, { operation: "issue_refund", params: { amount: 5 } })
      expect(asked.effect).toBe("defer")
      const intent = asked.intent_id

      const grant = owner.api.receipts.grantApproval({ path: { intent_id: intent }, payload: { ttl_seconds: 600 } })
      const deny = owner.api.approvals.denyApproval({ path: { intent_id: intent }, payload: { reason: "no" } })
      const [granted, denied] = yield* Effect.scoped(
        Effect.gen(function* () {
          // Another session's uncommitted grant of the same intent: the service's grant waits on it to write.
          yield* lockedRows(
            url,
            `insert into approval_grants (workspace_id, intent_id, granted_by, expires_at)
             values ($1, $2, 'someone', now() + interval '1 hour')`,
            [owner.workspaceId, intent]
          )
          const granting = yield* Effect.fork(Effect.either(grant))
          yield* until(Effect.map(serviceWaitsOnLocks(url), (waits) => expect(waits).toBe(1)))
          const denying = yield* Effect.fork(Effect.either(deny))
          // The denial either waits its turn behind the grant, or (were they not serialized) is already made.
          yield* until(
            Effect.gen(function* () {
              const done = Option.isSome(yield* Fiber.poll(denying))
              expect(done || (yield* serviceWaitsOnLocks(url)) === 2).toBe(true)
            })
          )
          return [granting, denying] as const
        })
      ).pipe(Effect.flatMap(([granting, denying]) => Effect.all([Fiber.join(granting), Fiber.join(denying)])))

      expect(Either.isRight(granted)).toBe(true)
      expect(Either.getOrThrow(denied).status).toBe("denied")
      // The denial withdrew the grant that came before it: none is left to read as granted.
      const left = yield* queryDatabase(
        url,
        "select granted_by from approval_grants where workspace_id = $1 and intent_id = $2",
        [owner.workspaceId, intent]
      )
      expect(left).toEqual([])
      const deniedList = yield* owner.api.approvals.listApprovals({ urlParams: { status: "denied" } })
      expect(deniedList.approvals.map((approval) => approval.intent_id)).toEqual([intent])
      yield* expectFailure(grant, 409, "approval_denied")
      const again = yield* propose(base, owner, AGENT, { operation: "issue_refund", params: { amount: 5 } })
      expect(again.effect).toBe("deny")
    })
  )
})
