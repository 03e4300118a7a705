/**
 * Audit retention against the real service and PostgreSQL: pruning deletes
 * in short batches behind a signed anchor that verify accepts; the retention
 * task prunes rows older than AUDIT_RETENTION_DAYS; a workspace whose prune
 * fails does not stop the others'.
 */
import { expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Scope, TestClock, TestContext } from "effect"
import { AuditLog } from "../../src/audit/AuditLog.js"
import { AuditRetentionLive } from "../../src/audit/Retention.js"
import { firstRefusesDeletes, queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { createPolicy } from "../support/Events.js"
import { INTERNAL_KEY, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { allEvents } from "./audit-helpers.js"

layer(testServerWithDatabase("database", { INTERNAL_API_KEY: INTERNAL_KEY }), SERVER_OPTIONS)(
  "audit retention",
  (it) => {
    it.effect("pruning keeps a signed anchor: the rest of the chain still verifies; it deletes in short batches", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        for (const i of [1, 2, 3]) yield* createPolicy(base, owner, `old-${i}`, { value: `v${i}` })
        const cutoff = new Date(Date.now() + 5)
        yield* Effect.sleep("20 millis")
        yield* createPolicy(base, owner, "young", { value: "y" })
        const before = yield* allEvents(owner)
        const kept = before.filter((event) => new Date(event.created_at) >= cutoff)
        expect(kept.map((event) => event.resource_id)).toEqual(["young"])

        const audit = yield* Effect.provide(AuditLog, AuditLog.Default)
        // At most 2 rows per transaction (the head row, which every change of the workspace waits for, is locked
        // for one batch at a time): one step per 2 old rows, each leaving a signed anchor the next continues from.
        const old = before.length - 1
        const pruned = yield* audit.pruneWorkspace(owner.workspaceId, cutoff, 2)
        expect(pruned).toEqual({ deleted: old, batches: Math.ceil(old / 2) })
        expect(yield* audit.pruneWorkspace(owner.workspaceId, cutoff, 2)).toEqual({ deleted: 0, batches: 0 })
        const after = yield* allEvents(owner)
        expect(after.map((event) => event.id)).toEqual(kept.map((event) => event.id))
        const verified = yield* owner.api.auditEvents.verifyAuditEvents({})
        expect(verified).toMatchObject({ valid: true, checked: 1, first_break: null })
        expect(verified.anchor).toEqual({ seq: kept[0]!.seq - 1, hash: kept[0]!.prev_hash, signature_valid: true })

        // A forged anchor (hash moved without a new signature) does not verify.
        yield* queryDatabase(db, `update audit_heads set anchor_hash = $2 where workspace_id = $1`, [
          owner.workspaceId,
          "0".repeat(64)
        ])
        const forged = yield* owner.api.auditEvents.verifyAuditEvents({})
        expect(forged.valid).toBe(false)
        expect(forged.anchor?.signature_valid).toBe(false)
      })
    )

    it.effect("the retention task prunes rows older than AUDIT_RETENTION_DAYS behind a signed anchor", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createPolicy(base, owner, "aged", { value: "x" })
        expect((yield* allEvents(owner)).length).toBeGreaterThan(0)

        // The task's clock three days ahead: with a retention of one day, every row is old.
        const scope = yield* Scope.make()
        yield* Effect.gen(function* () {
          yield* TestClock.setTime(Date.now() + 3 * 24 * 60 * 60 * 1000)
          yield* Layer.buildWithScope(AuditRetentionLive, scope)
        }).pipe(
          Effect.provide(TestContext.TestContext),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["AUDIT_RETENTION_DAYS", "1"]])))
        )
        yield* eventually(
          Effect.flatMap(allEvents(owner), (events) => (events.length === 0 ? Effect.void : Effect.fail("not yet")))
        )
        yield* Scope.close(scope, Exit.void)
        const verified = yield* owner.api.auditEvents.verifyAuditEvents({})
        expect(verified).toMatchObject({ valid: true, checked: 0, first_break: null })
        expect(verified.anchor?.signature_valid).toBe(true)

        // The chain goes on from the anchor.
        yield* createPolicy(base, owner, "after-prune", { value: "y" })
        const [next] = yield* allEvents(owner)
        expect(next!.prev_hash).toBe(verified.anchor!.hash)
        expect(yield* owner.api.auditEvents.verifyAuditEvents({})).toMatchObject({ valid: true, checked: 1 })
      })
    )
    it.effect("a workspace whose prune fails is logged; the other workspaces are pruned", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owners = [yield* tenant(base), yield* tenant(base)]
        for (const owner of owners) yield* createPolicy(base, owner, "aged", { value: "x" })
        const cutoff = new Date(Date.now() + 1)
        yield* eventually(Effect.suspend(() => (Date.now() > cutoff.getTime() ? Effect.void : Effect.fail("early"))))
        // The first of them in the prune's order refuses to lose its rows.
        const [refusing, [next]] = yield* firstRefusesDeletes(db, "audit_events", owners)
        const audit = yield* Effect.provide(AuditLog, AuditLog.Default)
        yield* audit.prune(cutoff, 100)
        expect((yield* allEvents(refusing)).length).toBeGreaterThan(0)
        expect(yield* allEvents(next!)).toEqual([])
        expect(yield* next!.api.auditEvents.verifyAuditEvents({})).toMatchObject({ valid: true, checked: 0 })
      }).pipe(Effect.scoped)
    )
  }
)
