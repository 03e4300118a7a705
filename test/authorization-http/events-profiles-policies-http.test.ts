/**
 * `POST /v1/events` over HTTP against the real service and PostgreSQL
 * (database event log): an agent profile and policies set up through the
 * API, then proposals that permit, deny, defer (escalated), rewrite; the
 * strictest effect wins; owner scoping; enabling a policy takes effect at
 * once (snapshot invalidation); params and operation targets. The identity
 * of a decision (intent_id, receipt_id, trace_id, latency_ms) and the
 * 400/403/404 answers for bad principals and bodies are in
 * events-identity-principal-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PolicyId } from "../../src/catalog/Domain.js"
import { jsonAt } from "../support/Api.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { reasonsOf, setPolicyEnabled } from "./event-helpers.js"
import { createPolicy, propose, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { AGENT, OTHER_AGENT, setUp } from "./events-support.js"

layer(testServer("database"), SERVER_OPTIONS)("POST /v1/events (database event log)", (it) => {
  describe("profile checks", () => {
    it.effect("innocuous content is permitted with no findings", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const decision = yield* propose(base, owner, AGENT, reply("Your order ships tomorrow."))
        expect(decision.effect).toBe("permit")
        expect(decision.findings).toEqual([])
        expect(decision.status).toBe("decided")
        expect(decision.transformed_value).toBeNull()
        expect(decision.approval).toBeNull()
        expect(decision.applied_grant).toBeNull()
        expect(decision.lease).toBeNull()
        expect(decision.reason.length).toBeGreaterThan(0)
      })
    )

    it.effect("a cannot_promise phrase is denied with a profile finding naming the phrase", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const decision = yield* propose(base, owner, AGENT, reply("Sure, I can give you A Full Refund today."))
        expect(decision.effect).toBe("deny")
        expect(decision.status).toBe("decided")
        expect(decision.domain).toBe("profile")
        expect(decision.findings).toHaveLength(1)
        expect(decision.findings[0]).toMatchObject({
          source: "profile",
          requirement_id: "authority.cannot_promise:a full refund",
          effect: "deny",
          policy_id: null
        })
        // Whole words only: "a full refundable deposit" is not the phrase.
        const partial = yield* propose(base, owner, AGENT, reply("We keep a full refundable deposit."))
        expect(partial.effect).toBe("permit")
      })
    )

    it.effect("an escalation trigger defers with status escalated; an out-of-scope topic defers without it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const escalated = yield* propose(base, owner, AGENT, reply("I will forward this to our lawyer."))
        expect(escalated.effect).toBe("defer")
        expect(escalated.status).toBe("escalated")
        expect(reasonsOf(escalated)).toEqual(["escalation_triggers:lawyer"])

        const outOfScope = yield* propose(base, owner, AGENT, reply("Here is some legal advice for you."))
        expect(outOfScope.effect).toBe("defer")
        expect(outOfScope.status).toBe("decided")
        expect(reasonsOf(outOfScope)).toEqual(["scope.out_of_scope:legal advice"])
      })
    )

    it.effect("a profile applies only to its own agent", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const decision = yield* propose(base, owner, OTHER_AGENT, reply("I can give you a full refund."))
        expect(decision.effect).toBe("permit")
        expect(decision.findings).toEqual([])
        // An agent without a profile is checked by the workspace's policies only.
        const unknown = yield* propose(base, owner, "no-such-agent", reply("I can give you a full refund."))
        expect(unknown.effect).toBe("permit")
      })
    )
  })

  describe("policies", () => {
    it.effect("a rewrite policy and a tone word both rewrite; transformed_value carries both replacements", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        yield* createPolicy(base, owner, "mask-darn", { action: "rewrite", value: "darn", rewrite: "[bleep]" })

        const both = yield* propose(base, owner, AGENT, reply("Darn, that question is stupid."))
        expect(both.effect).toBe("rewrite")
        expect(both.status).toBe("decided")
        expect(both.transformed_value).toBe("[bleep], that question is [removed].")
        expect(reasonsOf(both).sort()).toEqual(["mask-darn", "tone.forbidden:stupid"])

        const tone = yield* propose(base, owner, AGENT, reply("That was stupid of me, stupid."))
        expect(tone.effect).toBe("rewrite")
        expect(tone.transformed_value).toBe("That was [removed] of me, [removed].")

        const policyOnly = yield* propose(base, owner, OTHER_AGENT, reply("darn darn"))
        expect(policyOnly.effect).toBe("rewrite")
        expect(policyOnly.transformed_value).toBe("[bleep] [bleep]")
        expect(policyOnly.findings[0]).toMatchObject({ source: "content", policy_id: "mask-darn", effect: "rewrite" })
      })
    )

    it.effect("the strictest effect wins when several match: deny > defer > rewrite > permit", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        yield* createPolicy(base, owner, "allow-thanks", { action: "permit", value: "thanks" })
        yield* createPolicy(base, owner, "mask-darn", { action: "rewrite", value: "darn" })
        yield* createPolicy(base, owner, "hold-discount", { action: "defer", value: "discount" })
        yield* createPolicy(base, owner, "block-password", { action: "deny", value: "password" })

        const permit = yield* propose(base, owner, OTHER_AGENT, reply("thanks!"))
        expect(permit.effect).toBe("permit")
        expect(reasonsOf(permit)).toEqual(["allow-thanks"])

        const rewrite = yield* propose(base, owner, OTHER_AGENT, reply("thanks, darn"))
        expect(rewrite.effect).toBe("rewrite")

        const defer = yield* propose(base, owner, OTHER_AGENT, reply("thanks, darn, a discount"))
        expect(defer.effect).toBe("defer")
        expect(defer.transformed_value).toBeNull()
        expect(defer.domain).toBe("content")
        expect(reasonsOf(defer).sort()).toEqual(["allow-thanks", "hold-discount", "mask-darn"])

        const deny = yield* propose(base, owner, OTHER_AGENT, reply("thanks, darn, a discount, your password"))
        expect(deny.effect).toBe("deny")
        expect(deny.transformed_value).toBeNull()
        expect(deny.reason).toBe("policy block-password")
        expect(deny.findings).toHaveLength(4)

        // Profile and policy findings combine the same way: an escalation (defer) beats a rewrite.
        const mixed = yield* propose(base, owner, AGENT, reply("darn, ask your lawyer"))
        expect(mixed.effect).toBe("defer")
        expect(mixed.status).toBe("escalated")
        expect(mixed.transformed_value).toBeNull()
      })
    )

    it.effect("a policy owned by another agent does not apply; an unowned one applies to every agent", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        yield* createPolicy(base, owner, "other-no-gift-cards", { value: "gift card", owner: OTHER_AGENT })
        yield* createPolicy(base, owner, "no-crypto", { value: "bitcoin" })

        const mine = yield* propose(base, owner, AGENT, reply("Here is a gift card."))
        expect(mine.effect).toBe("permit")
        expect(mine.findings).toEqual([])

        const theirs = yield* propose(base, owner, OTHER_AGENT, reply("Here is a gift card."))
        expect(theirs.effect).toBe("deny")
        expect(reasonsOf(theirs)).toEqual(["other-no-gift-cards"])

        for (const agent of [AGENT, OTHER_AGENT]) {
          const everyone = yield* propose(base, owner, agent, reply("pay in Bitcoin"))
          expect(everyone.effect).toBe("deny")
          expect(reasonsOf(everyone)).toEqual(["no-crypto"])
        }
      })
    )

    it.effect("a disabled policy does not apply; enabling it applies to the next decisions, disabling stops it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        const created = yield* createPolicy(base, owner, "no-coupons", { value: "coupon code", enabled: false })
        expect(created.enabled).toBe(false)
        // Load the workspace's snapshot first, so enabling must invalidate it.
        const before = yield* propose(base, owner, AGENT, reply("Use coupon code SAVE10."))
        expect(before.effect).toBe("permit")

        expect((yield* setPolicyEnabled(base, owner, "no-coupons", true)).enabled).toBe(true)
        // Waits on the outcome, not on the clock: how soon the change applies depends on the machine's load.
        yield* until(
          Effect.map(propose(base, owner, AGENT, reply("Use coupon code SAVE10.")), (decision) => {
            expect(decision.effect).toBe("deny")
            expect(reasonsOf(decision)).toEqual(["no-coupons"])
          }),
          "30 seconds"
        )

        yield* setPolicyEnabled(base, owner, "no-coupons", false)
        yield* until(
          Effect.map(propose(base, owner, AGENT, reply("Use coupon code SAVE10.")), (decision) =>
            expect(decision.effect).toBe("permit")
          ),
          "30 seconds"
        )
      })
    )

    it.effect("a deleted policy stops applying at once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        yield* createPolicy(base, owner, "no-coupons", { value: "coupon" })
        expect((yield* propose(base, owner, AGENT, reply("a coupon"))).effect).toBe("deny")
        yield* owner.api.policies.deletePolicy({ path: { id: PolicyId.make("no-coupons") } })
        expect((yield* propose(base, owner, AGENT, reply("a coupon"))).effect).toBe("permit")
      })
    )

    it.effect("params.<path> policies match tool arguments (nested keys, list items, numbers)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        yield* createPolicy(base, owner, "no-evil-mail", {
          type: "regex",
          value: "@evil\\.example$",
          target: "params.to"
        })
        yield* createPolicy(base, owner, "hold-foreign-iban", {
          action: "defer",
          type: "regex",
          value: "^(FR|IT)[0-9]{2}",
          target: "params.recipient.iban"
        })
        yield* createPolicy(base, owner, "no-weapons-sku", { value: "WPN", target: "params.items" })

        const evil = yield* propose(base, owner, AGENT, {
          operation: "send_email",
          params: { to: "boss@EVIL.example", subject: "hi" }
        })
        expect(evil.effect).toBe("deny")
        expect(evil.findings[0]).toMatchObject({ policy_id: "no-evil-mail", source: "content" })
        expect(jsonAt(evil.findings[0]!.evidence, "matches")).toEqual([{ target: "params.to", text: "@EVIL.example" }])

        const good = yield* propose(base, owner, AGENT, {
          operation: "send_email",
          params: { to: "boss@good.example", subject: "mail from @evil.example" }
        })
        expect(good.effect).toBe("permit")

        const foreign = yield* propose(base, owner, AGENT, {
          operation: "send_payment",
          params: { recipient: { iban: "FR7630006000011234567890189" }, amount: 10 }
        })
        expect(foreign.effect).toBe("defer")
        expect(reasonsOf(foreign)).toEqual(["hold-foreign-iban"])
        const domestic = yield* propose(base, owner, AGENT, {
          operation: "send_payment",
          params: { recipient: { iban: "DE89370400440532013000" }, amount: 10 }
        })
        expect(domestic.effect).toBe("permit")

        const items = yield* propose(base, owner, AGENT, {
          operation: "place_order",
          params: { items: ["SKU-1", "wpn-77", "SKU-3"] }
        })
        expect(items.effect).toBe("deny")
        expect(jsonAt(items.findings[0]!.evidence, "matches")).toEqual([{ target: "params.items.1", text: "wpn" }])

        // Content is not a params target: the same text in content does not match.
        const inContent = yield* propose(base, owner, AGENT, reply("write to boss@evil.example"))
        expect(inContent.effect).toBe("permit")
      })
    )

    it.effect("operation-target policies match tool calls by name", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* setUp(base)
        yield* createPolicy(base, owner, "hold-account-deletion", {
          action: "defer",
          value: "delete_account",
          target: "operation"
        })
        const held = yield* propose(base, owner, AGENT, { operation: "delete_account", params: { user: "u1" } })
        expect(held.effect).toBe("defer")
        expect(held.status).toBe("decided")
        expect(reasonsOf(held)).toEqual(["hold-account-deletion"])
        expect(jsonAt(held.findings[0]!.evidence, "matches")).toEqual([{ target: "operation", text: "delete_account" }])

        const other = yield* propose(base, owner, AGENT, { operation: "lookup_order", params: { id: "o1" } })
        expect(other.effect).toBe("permit")
        // The tool name in a reply's text is not the operation.
        const text = yield* propose(base, owner, AGENT, reply("I cannot call delete_account for you."))
        expect(text.effect).toBe("permit")
      })
    )
  })
})
