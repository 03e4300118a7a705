/**
 * The audit log over HTTP against the real service and PostgreSQL: policy,
 * settings and API key changes record events with actor, request id and
 * digests; filters and cursor paging; verify holds, and breaks at a row
 * altered in the database; concurrent changes keep one chain; workspaces are
 * isolated; only admins and owners read it; events reach the `audit` topic.
 * Pruning: audit-retention-http.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import pg from "pg"
import { policyPath } from "../catalog/catalog-helpers.js"
import { clientAt, expectFailure } from "../support/Api.js"
import { call, expectError } from "../support/Raw.js"
import { queryDatabase, serviceWaitsOnLocks } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { createPolicy, yamlBytes, policyDocument } from "../support/Events.js"
import {
  createEnvironment,
  createKey,
  INTERNAL_KEY,
  joinedAs,
  keyClient,
  type Tenant,
  tenant
} from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { allEvents } from "./audit-helpers.js"

const HEX64 = /^[0-9a-f]{64}$/

/** The owner's client sending `x-request-id: requestId`. */
const withRequestId = (base: string, owner: Tenant, requestId: string) =>
  clientAt(base, { token: owner.jwt, headers: { "x-request-id": requestId } })

layer(testServerWithDatabase("database", { INTERNAL_API_KEY: INTERNAL_KEY }), SERVER_OPTIONS)("audit log", (it) => {
  it.effect(
    "policy create and delete, settings and API key changes record events with actor, request id, digests",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const id = uniqueName("p").replaceAll("_", "-")

        const created = yield* withRequestId(base, owner, "req-audit-create")
        yield* created.policies.createPolicy({ payload: yamlBytes(policyDocument(id, { value: "refund" })) })
        const deleting = yield* withRequestId(base, owner, "req-audit-delete")
        yield* deleting.policies.deletePolicy({ path: policyPath(id) })
        const settings = yield* withRequestId(base, owner, "req-audit-settings")
        yield* settings.settings.updateSettings({ payload: { default_action: "deny" } })
        const keys = yield* withRequestId(base, owner, "req-audit-key")
        const key = yield* keys.apiKeys.createApiKey({ payload: { name: "audited" } })

        const policyEvents = yield* owner.api.auditEvents.listAuditEvents({
          urlParams: { resource_type: "policy", resource_id: id }
        })
        const [deleted, inserted] = policyEvents.audit_events
        expect(policyEvents.audit_events).toHaveLength(2)
        expect(inserted).toMatchObject({
          action: "policy.create",
          resource_type: "policy",
          resource_id: id,
          workspace_id: owner.workspaceId,
          actor: { kind: "user", id: owner.user_id },
          request_id: "req-audit-create",
          before_digest: null
        })
        expect(inserted!.after_digest).toMatch(HEX64)
        expect(deleted).toMatchObject({ action: "policy.delete", request_id: "req-audit-delete", after_digest: null })
        expect(deleted!.before_digest).toBe(inserted!.after_digest)
        expect(deleted!.prev_hash).toBe(inserted!.hash)
        expect(deleted!.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)

        const settingsEvents = yield* owner.api.auditEvents.listAuditEvents({
          urlParams: { resource_type: "settings" }
        })
        const update = settingsEvents.audit_events.find((event) => event.request_id === "req-audit-settings")
        expect(update).toMatchObject({ action: "settings.update", resource_id: owner.workspaceId })
        expect(update!.before_digest).toMatch(HEX64)
        expect(update!.after_digest).toMatch(HEX64)
        expect(update!.before_digest).not.toBe(update!.after_digest)

        const keyEvents = yield* owner.api.auditEvents.listAuditEvents({
          urlParams: { resource_type: "api_key", resource_id: key.api_key.id }
        })
        expect(keyEvents.audit_events).toHaveLength(1)
        expect(keyEvents.audit_events[0]).toMatchObject({
          action: "api_key.create",
          actor: { kind: "user", id: owner.user_id },
          request_id: "req-audit-key"
        })
        // Neither the plaintext key nor its stored hash is in the event.
        expect(JSON.stringify(keyEvents)).not.toContain(key.plaintext_key)

        // Runtime keys cannot write configuration (docs/authentication.md): the key filter finds nothing.
        const byKey = yield* owner.api.auditEvents.listAuditEvents({ urlParams: { actor: `key:${key.api_key.id}` } })
        expect(byKey.audit_events).toEqual([])

        const verified = yield* owner.api.auditEvents.verifyAuditEvents({})
        expect(verified).toMatchObject({ valid: true, first_break: null, anchor: null })
        expect(verified.checked).toBe((yield* allEvents(owner)).length)
      })
  )

  it.effect("environments, checker modes, key revocation and prices are attributed too", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const api = yield* withRequestId(base, owner, "req-audit-access")
      const environment = yield* createEnvironment({ api })
      yield* api.environments.replaceCheckerModes({
        path: { environment_id: environment.id },
        payload: { flow_checker_mode: "enforce" }
      })
      const key = yield* createKey({ api })
      yield* api.apiKeys.revokeApiKeys({ payload: { ids: [key.api_key.id] } })
      yield* api.llmPricing.putLlmPrice({
        path: { model: "gpt-audit" },
        payload: { input_per_million_minor: 1, output_per_million_minor: 2 }
      })
      const events = (yield* allEvents(owner)).filter((event) => event.request_id === "req-audit-access")
      expect(events.every((event) => event.actor.kind === "user" && event.actor.id === owner.user_id)).toBe(true)
      expect(events.map((event) => `${event.action} ${event.resource_id}`).reverse()).toEqual([
        `environment.create ${environment.id}`,
        `environment.update ${environment.id}`,
        `api_key.create ${key.api_key.id}`,
        `api_key.update ${key.api_key.id}`,
        "llm_price.create gpt-audit"
      ])
    })
  )

  it.effect("filters by actor and time, and pages with next_cursor", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const ids = Array.from({ length: 5 }, (_, i) => `page-${i}-${uniqueName("p").replaceAll("_", "-")}`)
      for (const id of ids) yield* createPolicy(base, owner, id, { value: id })

      const seen: Array<string> = []
      let cursor: string | undefined
      let pages = 0
      do {
        const page = yield* owner.api.auditEvents.listAuditEvents({
          urlParams: { resource_type: "policy", limit: 2, ...(cursor === undefined ? {} : { cursor }) }
        })
        expect(page.audit_events.length).toBeLessThanOrEqual(2)
        seen.push(...page.audit_events.map((event) => event.resource_id))
        cursor = page.next_cursor
        pages++
      } while (cursor !== undefined)
      expect(seen).toEqual([...ids].reverse())
      expect(pages).toBe(3)

      const mine = yield* owner.api.auditEvents.listAuditEvents({ urlParams: { actor: `user:${owner.user_id}` } })
      expect(mine.audit_events.length).toBeGreaterThanOrEqual(5)
      expect(mine.audit_events.every((event) => event.actor.id === owner.user_id)).toBe(true)

      const all = yield* allEvents(owner, { resource_type: "policy" })
      const third = all[2]!
      const window = yield* owner.api.auditEvents.listAuditEvents({
        urlParams: {
          resource_type: "policy",
          start: third.created_at,
          end: new Date(Date.now() + 60_000).toISOString()
        }
      })
      expect(window.audit_events.every((event) => event.created_at >= third.created_at)).toBe(true)
      const none = yield* owner.api.auditEvents.listAuditEvents({
        urlParams: { start: "2000-01-01T00:00:00.000Z", end: "2000-01-02T00:00:00.000Z" }
      })
      expect(none.audit_events).toEqual([])

      for (const query of [
        "cursor=nonsense",
        "actor=robot",
        "start=yesterday",
        "limit=0",
        "end=2026-13-45T00:00:00.000Z"
      ]) {
        const answer = yield* call(base, "GET", `/v1/audit-events?${query}`, { token: owner.jwt })
        expectError(answer, 400)
      }
    })
  )

  it.effect("a row altered in the database breaks verify at that row", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      for (const i of [1, 2, 3]) yield* createPolicy(base, owner, `tamper-${i}`, { value: `v${i}` })
      const events = yield* owner.api.auditEvents.listAuditEvents({ urlParams: { resource_type: "policy" } })
      const target = events.audit_events[1]!
      expect((yield* owner.api.auditEvents.verifyAuditEvents({})).valid).toBe(true)

      yield* queryDatabase(db, `update audit_events set actor_id = 'someone-else' where id = $1`, [target.id])
      const broken = yield* owner.api.auditEvents.verifyAuditEvents({})
      expect(broken).toMatchObject({ valid: false, first_break: target.id })
      expect(broken.checked).toBe((yield* allEvents(owner)).length)
    })
  )

  it.effect("a change committed while verify walks the chain is no break", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const before = (yield* allEvents(owner)).length
      // A change whose transaction holds the audit rows until verify has read the head and waits to walk them:
      // it commits one row past the head verify read.
      const writer = new pg.Client({ connectionString: db })
      yield* Effect.promise(async () => {
        await writer.connect()
        await writer.query("begin")
        await writer.query("lock table audit_events in access exclusive mode")
        await writer.query(
          "update workspace_settings set telemetry_enabled = not telemetry_enabled where workspace_id = $1",
          [owner.workspaceId]
        )
      })
      const verifying = yield* Effect.fork(owner.api.auditEvents.verifyAuditEvents({}))
      yield* eventually(
        Effect.flatMap(serviceWaitsOnLocks(db, "audit_events"), (n) => (n > 0 ? Effect.void : Effect.fail("no wait")))
      )
      yield* Effect.promise(() => writer.query("commit").finally(() => writer.end()))
      expect(yield* Fiber.join(verifying)).toEqual({ valid: true, checked: before, first_break: null, anchor: null })
      expect(yield* owner.api.auditEvents.verifyAuditEvents({})).toMatchObject({ valid: true, checked: before + 1 })
    })
  )

  it.effect("20 concurrent policy creates keep one chain", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const before = (yield* allEvents(owner)).length
      yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => `parallel-${i}`),
        (id) => createPolicy(base, owner, id, { value: id }),
        { concurrency: "unbounded" }
      )
      const events = yield* allEvents(owner)
      expect(events.length).toBe(before + 20)
      expect(events.filter((event) => event.action === "policy.create")).toHaveLength(20)
      // Positions 1..n, each linking to the one before.
      const ordered = [...events].reverse()
      ordered.forEach((event, i) => {
        expect(event.seq).toBe(i + 1)
        if (i > 0) {
          expect(event.prev_hash).toBe(ordered[i - 1]!.hash)
          // Time never goes backwards along the chain (retention prunes by time).
          expect(event.created_at >= ordered[i - 1]!.created_at).toBe(true)
        }
      })
      expect(yield* owner.api.auditEvents.verifyAuditEvents({})).toEqual({
        valid: true,
        checked: events.length,
        first_break: null,
        anchor: null
      })
    })
  )

  it.effect("other workspaces' events are invisible; members and runtime keys get 403, admins read", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const other = yield* tenant(base)
      yield* createPolicy(base, owner, "isolated", { value: "x" })
      const theirs = yield* allEvents(other)
      expect(theirs.length).toBeGreaterThan(0)
      expect(theirs.every((event) => event.workspace_id === other.workspaceId)).toBe(true)
      expect(theirs.some((event) => event.resource_id === "isolated")).toBe(false)

      const member = yield* joinedAs(base, owner, "member")
      yield* expectFailure(member.api.auditEvents.listAuditEvents({ urlParams: {} }), 403)
      yield* expectFailure(member.api.auditEvents.verifyAuditEvents({}), 403)
      const runtime = yield* keyClient(base, yield* createKey(owner))
      yield* expectFailure(runtime.auditEvents.listAuditEvents({ urlParams: {} }), 403)
      const admin = yield* joinedAs(base, owner, "admin")
      const seen = yield* admin.api.auditEvents.listAuditEvents({ urlParams: { resource_type: "policy" } })
      expect(seen.audit_events.map((event) => event.resource_id)).toEqual(["isolated"])
      // Joining is an access change too.
      const members = yield* admin.api.auditEvents.listAuditEvents({ urlParams: { resource_type: "member" } })
      expect(members.audit_events.map((event) => event.action)).toContain("member.create")
    })
  )

  it.effect("events are published on the audit topic", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      yield* createPolicy(base, owner, "published", { value: "x" })
      const [event] = (yield* owner.api.auditEvents.listAuditEvents({ urlParams: { resource_id: "published" } }))
        .audit_events
      const published = yield* eventually(
        Effect.flatMap(
          queryDatabase<{ value: string; event_id: string }>(
            db,
            `select value, event_id::text as event_id from event_log where topic = 'audit' and key = $1`,
            [owner.workspaceId]
          ),
          (rows) => {
            const found = rows.find((row) => (JSON.parse(row.value) as Record<string, unknown>)["id"] === event!.id)
            return found === undefined ? Effect.fail("not yet") : Effect.succeed(found)
          }
        )
      )
      expect(JSON.parse(published.value)).toEqual({ schema_version: 1, ...event })
      // A UUIDv7 event id, like every other topic's.
      expect(published.event_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    })
  )
})
