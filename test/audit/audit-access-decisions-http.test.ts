/**
 * Decisions about access are in the audit log beside configuration
 * (docs/audit.md, migration 0030): who granted or denied an approval, and
 * which MCP tool definitions were pinned, changed and accepted. Before, a
 * grant or an accepted rug pull left no audit event at all.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt } from "../support/Api.js"
import { createAgent, eventBody } from "../support/Events.js"
import { call } from "../support/Raw.js"
import { INTERNAL_KEY, type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { refundsNeedApproval } from "../authorization-http/event-helpers.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { connect, mcpTenant, type Setup } from "../mcp/mcp-helpers.js"
import { startMcpUpstream } from "../mcp/mcp-upstream.js"

const upstream = await startMcpUpstream()
afterAll(() => upstream.close())

/** The owner's audit events of `resourceType`, oldest first, as `action resource_id actor-kind`. */
const auditTrail = (owner: Tenant, resourceType: string) =>
  Effect.map(
    owner.api.auditEvents.listAuditEvents({ urlParams: { resource_type: resourceType, limit: 200 } }),
    (page) =>
      page.audit_events
        .map((event) => ({
          line: `${event.action} ${event.resource_id}`,
          actor: event.actor,
          request: event.request_id
        }))
        .reverse()
  )

/** A deferred `issue_refund` of `orderId`: its intent id. */
const deferredIntent = (base: string, owner: Tenant, orderId: string) =>
  Effect.gen(function* () {
    const event = eventBody(owner, "audit-bot", { operation: "issue_refund", params: { order_id: orderId } })
    const answer = yield* call(base, "POST", "/v1/events", { token: owner.jwt, body: event })
    const body = answer.body as { effect: string; intent_id: string }
    expect(body.effect, answer.text).toBe("defer")
    return body.intent_id
  })

const listTools = (setup: Setup) =>
  Effect.flatMap(connect(setup), ({ client }) => Effect.promise(() => client.listTools()))

layer(testServerWithDatabase("database", { ...GATEWAY_SETTINGS, INTERNAL_API_KEY: INTERNAL_KEY }), SERVER_OPTIONS)(
  "audit log: access decisions",
  (it) => {
    it.effect("approval grants and denials record who gave them, in the request that gave them", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "audit-bot")
        yield* refundsNeedApproval(base, owner)
        const granted = yield* deferredIntent(base, owner, "o-1")
        const denied = yield* deferredIntent(base, owner, "o-2")

        const api = yield* clientAt(base, { token: owner.jwt, headers: { "x-request-id": "req-approval-audit" } })
        yield* api.receipts.grantApproval({ path: { intent_id: granted }, payload: { note: "ok" } })
        yield* api.approvals.denyApproval({ path: { intent_id: denied }, payload: { reason: "no" } })

        const grants = yield* auditTrail(owner, "approval_grant")
        expect(grants.map((event) => event.line)).toEqual([`approval_grant.create ${granted}`])
        expect(grants[0]!.actor).toEqual({ kind: "user", id: owner.user_id })
        expect(grants[0]!.request).toBe("req-approval-audit")
        const denials = yield* auditTrail(owner, "approval_denial")
        expect(denials.map((event) => event.line)).toEqual([`approval_denial.create ${denied}`])
        expect(denials[0]!.actor).toEqual({ kind: "user", id: owner.user_id })
        const verified = yield* owner.api.auditEvents.verifyAuditEvents()
        expect(verified.valid).toBe(true)
      })
    )

    it.scoped("a tool pin's first listing, its changed definition and its acceptance are recorded", () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(upstream.url)
        const pin = `${setup.serverId}/lookup_order`
        yield* listTools(setup)
        yield* listTools(setup) // an unchanged listing records nothing
        upstream.redescribeLookupOrder("Looks an order up, now with notes")
        yield* listTools(setup)
        const changed = yield* setup.owner.api.mcpServers.listMcpToolPins({
          path: { id: setup.serverId },
          urlParams: {}
        })
        const seen = changed.tools.find((tool) => tool.tool === "lookup_order")!.seen_digest
        yield* setup.owner.api.mcpServers.acceptMcpToolPin({
          path: { id: setup.serverId, tool: "lookup_order" },
          payload: { seen_digest: seen }
        })

        const trail = (yield* auditTrail(setup.owner, "mcp_tool_pin")).filter((event) => event.line.endsWith(pin))
        expect(trail.map((event) => `${event.line} ${event.actor.kind}`)).toEqual([
          `mcp_tool_pin.create ${pin} system`,
          `mcp_tool_pin.update ${pin} system`,
          `mcp_tool_pin.update ${pin} user`
        ])
      })
    )
  }
)
