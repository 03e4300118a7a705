/**
 * A provider connection's `base_url` and the workspace's
 * `escalation_webhook_url` are checked (their host resolved, up to 3 s)
 * before the write's transaction opens: while the lookups wait on a DNS
 * server that does not answer, none of these requests holds a pooled
 * database connection in an open transaction, so a few of them cannot starve
 * every other request of connections. The writes stay in the audit chain,
 * attributed to their caller. (Budget alerts: test/billing/budget-alerts-dns-http.test.ts.)
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber, Redacted } from "effect"
import { until } from "../support/Eventually.js"
import { slowResolver, writesWaitingOnDns } from "../support/SlowDns.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

const SLOW_HOST = "slow-dns.example.com"
const slow = slowResolver(SLOW_HOST)
const { lookups, resolver } = slow

/** Runs `writes` at once while DNS hangs: none holds a transaction meanwhile (`writesWaitingOnDns`). */
const whileWaitingOnDns = <A, E, R>(writes: ReadonlyArray<Effect.Effect<A, E, R>>) =>
  Effect.flatMap(TestDatabaseUrl, (db) => writesWaitingOnDns(slow, db, writes))

layer(testServerWithDatabase("database", {}, resolver), SERVER_OPTIONS)("save-time URL checks", (it) => {
  it.effect("provider connections created and moved while DNS hangs hold no connection in a transaction", () =>
    Effect.gen(function* () {
      const owner = yield* tenant(yield* baseUrl)
      const connections = owner.api.providerConnections
      const key = Redacted.make("sk-slow-dns")
      const existing = yield* connections.createProviderConnection({
        payload: {
          display_name: "direct",
          kind: "chat_compatible",
          provider_api_key: key,
          base_url: "https://8.8.8.8/v1"
        }
      })
      const slowUrl = `https://${SLOW_HOST}/v1`

      const written = yield* whileWaitingOnDns([
        ...[1, 2].map((n) =>
          connections.createProviderConnection({
            payload: { display_name: `slow ${n}`, kind: "chat_compatible", provider_api_key: key, base_url: slowUrl }
          })
        ),
        connections.updateProviderConnection({
          path: { id: existing.id },
          payload: { base_url: slowUrl, provider_api_key: key }
        })
      ])
      expect(written.map((connection) => connection.base_url)).toEqual([slowUrl, slowUrl, slowUrl])
      const listed = (yield* connections.listProviderConnections({})).provider_connections
      expect(listed.map((connection) => connection.base_url)).toEqual([slowUrl, slowUrl, slowUrl])

      const audit = yield* owner.api.auditEvents.listAuditEvents({
        urlParams: { resource_type: "provider_connection" }
      })
      expect(
        audit.audit_events.filter((event) => event.resource_id === existing.id).map((event) => event.action)
      ).toEqual(["provider_connection.update", "provider_connection.create"])
      expect(audit.audit_events).toHaveLength(4)
      for (const event of audit.audit_events) expect(event.actor).toEqual({ kind: "user", id: owner.user_id })
    })
  )

  it.effect("a base_url moved while a patch waits on DNS is compared with the moved one: the key does not follow", () =>
    Effect.gen(function* () {
      const owner = yield* tenant(yield* baseUrl)
      const connections = owner.api.providerConnections
      const slowUrl = `https://${SLOW_HOST}/v1`
      const created = yield* connections.createProviderConnection({
        payload: { display_name: "slow", kind: "chat_compatible", provider_api_key: Redacted.make("sk-first") }
      })
      const path = { id: created.id }
      yield* connections.updateProviderConnection({
        path,
        payload: { base_url: slowUrl, provider_api_key: Redacted.make("sk-slow") }
      })
      // "The same base_url again, no key" waits on DNS while another request moves it, with a key for the new host.
      const before = lookups.length
      const again = yield* Effect.fork(
        Effect.either(connections.updateProviderConnection({ path, payload: { base_url: slowUrl } }))
      )
      yield* until(
        Effect.sync(() => expect(lookups.length - before).toBe(1)),
        "30 seconds"
      )
      yield* connections.updateProviderConnection({
        path,
        payload: { base_url: "https://8.8.8.8/v1", provider_api_key: Redacted.make("sk-for-8888") }
      })
      // Compared with what was stored when it read the row, it would move the new host's key to the old host.
      const refused = yield* Fiber.join(again)
      expect(refused._tag === "Left" && refused.left._tag === "BadRequest" && refused.left.details).toEqual([
        { path: "provider_api_key", message: "required when base_url changes" }
      ])
      const stored = (yield* connections.listProviderConnections({})).provider_connections.find(
        (connection) => connection.id === created.id
      )
      expect(stored?.base_url).toBe("https://8.8.8.8/v1")
    })
  )

  it.effect("settings patched with an escalation URL while DNS hangs hold no connection in a transaction", () =>
    Effect.gen(function* () {
      const owner = yield* tenant(yield* baseUrl)
      const hook = `https://${SLOW_HOST}/escalations`
      yield* whileWaitingOnDns([
        owner.api.settings.updateSettings({ payload: { escalation_webhook_url: hook } }),
        // With config: the merge that locks the settings row, too.
        owner.api.settings.updateSettings({ payload: { escalation_webhook_url: hook, config: { marker: "dns" } } })
      ])
      const settings = yield* owner.api.settings.getSettings({})
      expect([settings.escalation_webhook_url, settings.config]).toEqual([hook, { marker: "dns" }])

      const audit = yield* owner.api.auditEvents.listAuditEvents({ urlParams: { resource_type: "settings" } })
      const updates = audit.audit_events.filter((event) => event.action === "settings.update")
      expect(updates).toHaveLength(2)
      for (const event of updates) expect(event.actor).toEqual({ kind: "user", id: owner.user_id })
    })
  )
})
