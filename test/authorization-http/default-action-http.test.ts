/**
 * The workspace's `default_action` decides when no guardrail produces a
 * finding: with `deny` or `defer`, an action nothing matched is refused or
 * held; a matching `permit` policy still lets it through (an allow-list).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { createAgent, createPolicy, propose, reply } from "../support/Events.js"

layer(testServer("database"), SERVER_OPTIONS)("default_action", (it) => {
  it.effect("permit by default; deny or defer when set; a matching permit policy still permits", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      // A registered agent: an unregistered one gets a finding of its own (first-hour-http.test.ts).
      yield* createAgent(base, owner, "bot")
      const innocuous = reply("Your order ships tomorrow.")
      expect((yield* propose(base, owner, "bot", innocuous)).effect).toBe("permit")

      for (const defaultAction of ["deny", "defer"] as const) {
        yield* owner.api.settings.updateSettings({ payload: { default_action: defaultAction } })
        // Settings reach decisions within a second (cached runtime config).
        yield* Effect.sleep("1100 millis")
        const decision = yield* propose(base, owner, "bot", innocuous)
        expect(decision.effect).toBe(defaultAction)
        expect(decision.domain).toBe("default")
        expect(decision.findings).toEqual([])
      }

      yield* createPolicy(base, owner, "allow-shipping", { action: "permit", value: "ships tomorrow" })
      const allowed = yield* propose(base, owner, "bot", innocuous)
      expect(allowed.effect).toBe("permit")
      expect(allowed.findings.map((finding) => finding.policy_id)).toEqual(["allow-shipping"])
    })
  )
})
