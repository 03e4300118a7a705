/**
 * An MCP server's url is checked (its host resolved, up to 3 s) before the
 * write's transaction opens: while the lookups of creates and patches wait
 * on a DNS server that does not answer, none of them holds a pooled
 * database connection in an open transaction, so a few such requests cannot
 * starve every other request of connections. The writes stay in the audit
 * chain, attributed to their caller, and the stored headers still need
 * sending again with a new url.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { expectFailure } from "../support/Api.js"
import { slowResolver, writesWaitingOnDns } from "../support/SlowDns.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS, registerAgent } from "../gateway/gateway-helpers.js"
import { AGENT } from "./mcp-helpers.js"

const SLOW_HOST = "slow-dns.example.com"
const SLOW_URL = `https://${SLOW_HOST}/mcp`

const slow = slowResolver(SLOW_HOST)

layer(testServerWithDatabase("database", GATEWAY_SETTINGS, slow.resolver), SERVER_OPTIONS)(
  "MCP server url checks",
  (it) => {
    it.effect("creates and patches waiting on DNS hold no database connection in a transaction", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* registerAgent(owner, AGENT)
        const servers = owner.api.mcpServers
        const payload = { display_name: "Mail", url: "http://127.0.0.1:1/mcp", agent_id: AGENT }
        const plain = yield* servers.createMcpServer({ payload })
        const secret = yield* servers.createMcpServer({
          payload: { ...payload, headers: Redacted.make({ "X-Token": "upstream-secret" }) }
        })

        // A name that does not resolve at save time is accepted (docs/outbound.md): every write then goes through.
        const written = yield* writesWaitingOnDns(slow, db, [
          ...[1, 2].map(() => servers.createMcpServer({ payload: { ...payload, url: SLOW_URL } })),
          servers.updateMcpServer({ path: { id: plain.id }, payload: { url: SLOW_URL } }),
          servers.updateMcpServer({
            path: { id: secret.id },
            payload: { url: SLOW_URL, headers: Redacted.make({ "X-Token": "other-secret" }) }
          })
        ])
        expect(written.map((server) => server.url)).toEqual([SLOW_URL, SLOW_URL, SLOW_URL, SLOW_URL])
        expect(written[3]!.header_names).toEqual(["X-Token"])

        // Stored headers still go to a new address only when sent with it.
        const refused = yield* expectFailure(
          servers.updateMcpServer({ path: { id: secret.id }, payload: { url: "http://127.0.0.1:2/mcp" } }),
          400,
          "validation_failed"
        )
        expect(refused.details?.map((detail) => detail.path)).toEqual(["headers"])
        expect((yield* servers.getMcpServer({ path: { id: secret.id } })).url).toBe(SLOW_URL)

        // Every write is still in the audit chain, attributed to its caller.
        yield* servers.deleteMcpServer({ path: { id: plain.id } })
        const audit = yield* owner.api.auditEvents.listAuditEvents({ urlParams: { resource_type: "mcp_server" } })
        expect(
          audit.audit_events.filter((event) => event.resource_id === plain.id).map((event) => event.action)
        ).toEqual(["mcp_server.delete", "mcp_server.update", "mcp_server.create"])
        expect(audit.audit_events).toHaveLength(7)
        for (const event of audit.audit_events) expect(event.actor).toEqual({ kind: "user", id: owner.user_id })
      })
    )
  }
)
