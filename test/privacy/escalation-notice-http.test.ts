/**
 * The escalation webhook's notice leaves the system of record like the
 * decisions topic's details: its `reason` is kept under the workspace's
 * data_handling_mode (before, it went out as decided in every mode).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createAgent, proposeCall, reply } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { untilReceived, webhookReceiver } from "../billing/billing-helpers.js"

layer(testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1" }), SERVER_OPTIONS)("escalation notices", (it) => {
  it.scoped("under metadata_only the notice's reason is a digest; the answer keeps its reason", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const receiver = yield* webhookReceiver(() => 200)
      yield* createAgent(base, owner, "support-bot")
      yield* owner.api.settings.updateSettings({
        payload: { data_handling_mode: "metadata_only", escalation_webhook_url: receiver.url }
      })
      const decision = yield* proposeCall(base, owner, "support-bot", reply("I will ask our lawyer."))
      expect(decision.status).toBe("escalated")
      yield* untilReceived(receiver, 1)
      const notice = JSON.parse(receiver.received[0]!.body) as { type: string; trace_id: string; reason: string }
      expect(notice.type).toBe("decision.escalated")
      expect(notice.trace_id).toBe(decision.trace_id)
      expect(notice.reason).toMatch(/^\[sha256:[0-9a-f]{64} length:\d+\]$/)
      expect(decision.reason).not.toMatch(/^\[sha256:/)
    })
  )
})
