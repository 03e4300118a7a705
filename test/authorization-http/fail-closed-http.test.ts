/**
 * Fail-safe with a real fault, no mocks: the tool-metadata table the catalog
 * snapshot reads is renamed away in the service's own database, so loading a
 * workspace's snapshot fails. `POST /v1/events` still answers 200, with
 * effect `defer` and a `system:fail_closed` finding, for a workspace whose
 * snapshot was invalidated by a catalog change and for one never loaded; the
 * decision is still traced and signed. Once the table is back, decisions are
 * made normally again.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { queryDatabase } from "../support/Database.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { reasonsOf, upsertTool } from "./event-helpers.js"
import { createAgent, createPolicy, type Decision, propose, reply } from "../support/Events.js"

const AGENT = "support-bot"

const expectFailClosed = (decision: Decision) => {
  expect(decision.effect).toBe("defer")
  expect(decision.transformed_value).toBeNull()
  expect(decision.findings).toHaveLength(1)
  const [finding] = decision.findings
  expect(finding!.requirement_id).toBe("system:fail_closed")
  expect(finding!.effect).toBe("defer")
  expect(finding!.reason.length).toBeGreaterThan(0)
  expect(finding!.remediation ?? "").not.toBe("")
}

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("fail closed when the tool registry cannot be read", (it) => {
  it.effect("a broken tool_metadata table gives 200 defer with a fail_closed finding; restoring it recovers", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const databaseUrl = yield* TestDatabaseUrl

      const loaded = yield* tenant(base)
      yield* createAgent(base, loaded, AGENT)
      yield* upsertTool(base, loaded, { tool: "lookup_order", reversible: true, side_effect: "none" })
      // The snapshot of `loaded` is in memory before the fault.
      expect((yield* propose(base, loaded, AGENT, reply("Your order ships tomorrow."))).effect).toBe("permit")
      const fresh = yield* tenant(base)

      const breakTable = queryDatabase(databaseUrl, "alter table tool_metadata rename to tool_metadata_broken")
      const restoreTable = queryDatabase(databaseUrl, "alter table tool_metadata_broken rename to tool_metadata")

      yield* breakTable
      yield* Effect.gen(function* () {
        // A catalog change (a policy write, which does not touch tool_metadata) drops the loaded snapshot.
        yield* createPolicy(base, loaded, "no-coupons", { value: "coupon" })

        const innocuous = yield* propose(base, loaded, AGENT, reply("Your order ships tomorrow."))
        expectFailClosed(innocuous)
        const toolCall = yield* propose(base, loaded, AGENT, { operation: "lookup_order", params: { id: "o1" } })
        expectFailClosed(toolCall)
        // Even content a policy would deny is deferred: nothing was evaluated.
        expectFailClosed(yield* propose(base, loaded, AGENT, reply("use a coupon")))

        // A workspace never loaded fails closed the same way.
        const neverLoaded = yield* propose(base, fresh, AGENT, reply("hello"))
        expectFailClosed(neverLoaded)

        // The fail-closed decision is still traced and signed.
        const traces = yield* fresh.api.traces.listTraces({ urlParams: { limit: 1 } })
        expect(traces.traces.map((trace) => [trace.trace_id, trace.decision])).toEqual([
          [neverLoaded.trace_id, "defer"]
        ])
        const receipt = yield* fresh.api.receipts.getReceipt({ path: { id: neverLoaded.receipt_id } })
        const payload = JSON.parse(Buffer.from(receipt.jws.split(".")[1]!, "base64url").toString("utf8")) as {
          effect: string
        }
        expect(payload.effect).toBe("defer")
      }).pipe(Effect.ensuring(Effect.orDie(restoreTable)))

      // The registry is back: failed loads were not kept, so decisions are normal again.
      const recovered = yield* propose(base, loaded, AGENT, reply("Your order ships tomorrow."))
      expect(recovered.effect).toBe("permit")
      expect(recovered.findings).toEqual([])
      const denied = yield* propose(base, loaded, AGENT, reply("use a coupon"))
      expect(denied.effect).toBe("deny")
      expect(reasonsOf(denied)).toEqual(["no-coupons"])
      expect((yield* propose(base, fresh, AGENT, reply("hello"))).effect).toBe("permit")
      expect((yield* propose(base, loaded, AGENT, { operation: "lookup_order", params: { id: "o1" } })).effect).toBe(
        "permit"
      )
    })
  )
})
