/**
 * A url knowledge source's `location` is checked by the outbound guard (its
 * host resolved, up to 3 s) before the write's transaction opens: while the
 * lookups of several creates wait on a DNS server that does not answer, none
 * of them holds a pooled database connection in an open transaction, so a
 * few such requests cannot starve every other request of connections. The
 * writes stay in the audit chain, attributed to their caller.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { slowResolver, writesWaitingOnDns } from "../support/SlowDns.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

const SLOW_HOST = "slow-dns.example.com"
const SLOW_URL = `https://${SLOW_HOST}/faq`

/** When each lookup of SLOW_HOST started; none of them ever answers. */
const slow = slowResolver(SLOW_HOST)
const { resolver } = slow

layer(testServerWithDatabase("database", {}, resolver), SERVER_OPTIONS)("knowledge source location checks", (it) => {
  it.effect("creates waiting on DNS hold no database connection in a transaction, and are audited", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const create = (title: string) =>
        owner.api.knowledgeSources.createKnowledgeSource({ payload: { kind: "url", title, location: SLOW_URL } })

      // None holds a transaction while its lookup waits; a name that does not resolve at save time is accepted
      // (docs/outbound.md): every write then goes through.
      const written = yield* writesWaitingOnDns(
        slow,
        db,
        ["one", "two", "three"].map((title) => create(title))
      )
      expect(written.map((source) => source.location)).toEqual([SLOW_URL, SLOW_URL, SLOW_URL])
      expect(
        (yield* owner.api.knowledgeSources.listKnowledgeSources({ urlParams: {} })).knowledge_sources
      ).toHaveLength(3)

      // Every write is in the audit chain, attributed to its caller.
      const audit = yield* owner.api.auditEvents.listAuditEvents({ urlParams: { resource_type: "knowledge_source" } })
      expect(audit.audit_events.map((event) => event.resource_id).sort()).toEqual(
        written.map((source) => source.id).sort()
      )
      for (const event of audit.audit_events) {
        expect(event.action).toBe("knowledge_source.create")
        expect(event.actor).toEqual({ kind: "user", id: owner.user_id })
      }
    })
  )
})
