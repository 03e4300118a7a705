/**
 * The policy language's composites, `normalize`, evidence spans and rewrite
 * by spans (docs/policies.md), through `POST /v1/policies`, `POST /v1/events`,
 * `POST /v1/policies/validate` and `GET /v1/policies/schema`; and the agent
 * profile's `canaries` round trip.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId } from "../../src/catalog/Domain.js"
import { expectInvalid, withRaw } from "../support/Api.js"
import { apiOf, createAgent, propose, reply, yamlBytes } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { AGENT, createMatchPolicy, evidenceOf, policyText, setUp } from "./match-helpers.js"


const literal = (value: string, extra: object = {}) => ({ type: "literal", value, target: "content", ...extra })
const card = { type: "detector", detector: "pii", categories: ["card"], target: "content" }

layer(testServer("database"), SERVER_OPTIONS)("policy language", (it) => {
  it.effect("all matches when every child does; its spans are the positive leaves'", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      yield* createMatchPolicy(base, owner, "refund-to-card", { all: [literal("refund"), card] })
      const both = yield* propose(base, owner, AGENT, reply("Refund to card 4111 1111 1111 1111"))
      expect(both.effect).toBe("deny")
      expect(evidenceOf(both, "refund-to-card")).toEqual({
        family: "content",
        matches: [
          { target: "content", text: "Refund" },
          { target: "content", text: "4111 1111 1111 1111", detector: "pii", category: "card" }
        ],
        spans: [
          { start: 0, end: 6 },
          { start: 15, end: 34 }
        ],
        target: "content"
      })
      expect((yield* propose(base, owner, AGENT, reply("Refund to your card"))).effect).toBe("permit")
      expect((yield* propose(base, owner, AGENT, reply("Card 4111 1111 1111 1111"))).effect).toBe("permit")
    })
  )

  it.effect("any matches when one child does; not when its child does not; leaves read their own targets", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      yield* createMatchPolicy(base, owner, "money-words", { any: [literal("refund"), literal("chargeback")] })
      const words = yield* propose(base, owner, AGENT, reply("No chargeback, sorry"))
      expect(evidenceOf(words, "money-words")).toMatchObject({ spans: [{ start: 3, end: 13 }] })
      expect((yield* propose(base, owner, AGENT, reply("Your parcel is on its way"))).effect).toBe("permit")
      // A payment without an approval reference is held; the not-leaf adds no span.
      yield* createMatchPolicy(
        base,
        owner,
        "unapproved-payment",
        {
          all: [
            { type: "literal", value: "send_payment", target: "operation" },
            { not: { type: "regex", value: "^APR-\\d+$", target: "params.approval" } }
          ]
        },
        { family: "tool", action: "defer" }
      )
      const unapproved = yield* propose(base, owner, AGENT, { operation: "send_payment", params: { amount: 5 } })
      expect(unapproved.effect).toBe("defer")
      expect(evidenceOf(unapproved, "unapproved-payment")).toMatchObject({
        matches: [{ target: "operation", text: "send_payment" }],
        spans: [{ start: 0, end: 12 }],
        target: "operation"
      })
      const approved = yield* propose(base, owner, AGENT, {
        operation: "send_payment",
        params: { amount: 5, approval: "APR-42" }
      })
      expect(approved.effect).toBe("permit")
    })
  )

  it.effect("normalize: a literal hidden by zero-width characters or spacing matches only with normalize true", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      yield* createMatchPolicy(base, owner, "plain-password", literal("password"), { mode: "observe" })
      yield* createMatchPolicy(base, owner, "any-password", literal("password", { normalize: true }), {
        mode: "observe"
      })
      const zeroWidth = yield* propose(base, owner, AGENT, reply("the pass\u200bword is hunter2"))
      expect(zeroWidth.findings.map((f) => f.policy_id)).toEqual(["any-password"])
      // The raw range includes the zero-width character.
      expect(evidenceOf(zeroWidth, "any-password")).toMatchObject({
        detail: { matches: [{ text: "pass\u200bword" }], spans: [{ start: 4, end: 13 }] }
      })
      const spaced = yield* propose(base, owner, AGENT, reply("it is p a s s w o r d"))
      expect(spaced.findings.map((f) => f.policy_id)).toEqual(["any-password"])
      expect(evidenceOf(spaced, "any-password")).toMatchObject({ detail: { spans: [{ start: 6, end: 21 }] } })
      const plain = yield* propose(base, owner, AGENT, reply("Password reset"))
      expect(plain.findings.map((f) => f.policy_id).sort()).toEqual(["any-password", "plain-password"])
      // Found in the raw and the folded text alike: one match.
      expect(evidenceOf(plain, "any-password")).toMatchObject({ detail: { spans: [{ start: 0, end: 8 }] } })
    })
  )

  it.effect("a base64-encoded hit maps to the whole encoded range, and rewrite replaces exactly the spans", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      yield* createMatchPolicy(base, owner, "hide-password", literal("password", { normalize: true }), {
        action: "rewrite",
        rewrite: "[hidden]"
      })
      const encoded = Buffer.from("my password is hunter2").toString("base64")
      const content = `the pass\u200bword is p a s s w o r d, or ${encoded}; password!`
      const decision = yield* propose(base, owner, AGENT, reply(content))
      expect(decision.effect).toBe("rewrite")
      const at = content.indexOf(encoded)
      expect(evidenceOf(decision, "hide-password")).toMatchObject({
        spans: [
          { start: 4, end: 13 },
          { start: 17, end: 32 },
          { start: at, end: at + encoded.length },
          { start: at + encoded.length + 2, end: at + encoded.length + 10 }
        ]
      })
      expect(decision.transformed_value).toBe("the [hidden] is [hidden], or [hidden]; [hidden]!")
    })
  )

  it.effect("rewrite by a detector replaces each card number; overlapping spans are replaced once", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      yield* createMatchPolicy(base, owner, "mask-cards", card, { action: "rewrite", rewrite: "[card]" })
      // Two leaves finding overlapping ranges: replaced as one range.
      yield* createMatchPolicy(
        base,
        owner,
        "mask-codes",
        { any: [literal("code 1234"), { type: "regex", value: "1234 5678", target: "content" }] },
        { action: "rewrite", rewrite: "[code]" }
      )
      const cards = yield* propose(
        base,
        owner,
        AGENT,
        reply("Cards 4111 1111 1111 1111 and 5500-0000-0000-0004 on file")
      )
      expect(cards.transformed_value).toBe("Cards [card] and [card] on file")
      const codes = yield* propose(base, owner, AGENT, reply("your code 1234 5678 works"))
      expect(codes.transformed_value).toBe("your [code] works")
    })
  )

  it.effect("validation names the path of bad detector options and bad composites", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      const api = yield* apiOf(base, owner)
      const check = (match: unknown) =>
        Effect.map(api.policies.validatePolicy({ payload: yamlBytes(policyText("p1", match)) }), (result) =>
          result.errors.map((error) => [error.path, error.message])
        )
      expect(yield* check({ type: "detector", detector: "face", target: "content" })).toEqual([
        [
          "match.detector",
          'Expected "pii" | "secret" | "prompt_injection" | "system_prompt_leak" | "url", actual "face"'
        ]
      ])
      expect(
        yield* check({
          all: [literal("x"), { type: "detector", detector: "prompt_injection", threshold: 2, target: "content" }]
        })
      ).toEqual([["match.all.1.threshold", "must be a number above 0 and at most 1"]])
      expect(yield* check({ ...card, categories: ["card", "dna"] })).toEqual([
        ["match.categories.1", 'Expected "email" | "phone" | "card" | "iban" | "ssn" | "ip" | "address", actual "dna"']
      ])
      expect(yield* check({ type: "detector", detector: "url", deny: ["evil example"], target: "content" })).toEqual([
        ["match.deny.0", "must be a domain such as example.com"]
      ])
      expect(yield* check({ any: [] })).toEqual([["match.any", "must list at least one item"]])
      expect(yield* check({ not: { not: { not: { not: { not: literal("x") } } } } })).toEqual([
        ["match.not.not.not.not.not", "all, any and not nest at most 4 deep"]
      ])
      expect(yield* check({ all: [literal("x")], type: "literal" })).toEqual([
        ["match", "A match has exactly one of type, all, any or not; got type and all"]
      ])
      expect(yield* check({ any: [literal("x"), { type: "literal", value: "y", target: "body" }] })).toEqual([
        [
          "match.any.1.target",
          'match.any.1.target must be content, operation or params.<path> (dot-separated keys and array indexes, e.g. params.to.0), got "body"'
        ]
      ])
      expect(yield* check({ type: "glob", value: "x", target: "content" })).toEqual([
        ["match.type", 'Expected "literal" | "regex" | "any_of" | "detector", actual "glob"']
      ])
      // A rewrite of a match that only says what is absent has nothing to replace.
      const rewriteNot = yield* api.policies.validatePolicy({
        payload: yamlBytes(policyText("p2", { not: literal("x") }, { action: "rewrite", rewrite: "[r]" }))
      })
      expect(rewriteNot.errors.map((error) => error.path)).toEqual(["match"])
      // Create refuses the same document with the same paths.
      yield* expectInvalid(
        api.policies.createPolicy({
          payload: yamlBytes(policyText("p3", { all: [literal("x"), { ...card, categories: [] }] }))
        }),
        "match.all.1.categories"
      )
    })
  )

  it.effect("GET /v1/policies/schema describes detectors and recursive all/any/not with $defs and $ref", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const answer = yield* withRaw(owner.api.policies.getPolicySchema({ withResponse: true }))
      const schema = answer.body as {
        readonly $schema: string
        readonly $defs: Record<string, { readonly anyOf?: ReadonlyArray<unknown>; readonly properties?: object }>
      }
      expect(schema.$schema).toBe("http://json-schema.org/draft-07/schema#")
      // Every reference points at a definition in the document.
      const refs = [...answer.text.matchAll(/"\$ref":"([^"]*)"/g)].map((m) => m[1]!)
      expect(refs.length).toBeGreaterThan(0)
      for (const ref of refs) {
        expect(ref).toMatch(/^#\/\$defs\//)
        expect(schema.$defs[ref.slice("#/$defs/".length)], ref).toBeDefined()
      }
      const members = (schema.$defs["PolicyMatch"]?.anyOf ?? []).map((m) => JSON.stringify(m))
      for (const name of ["SimpleMatch", "PiiMatch", "SecretMatch", "PromptInjectionMatch", "SystemPromptLeakMatch"]) {
        expect(members).toContain(JSON.stringify({ $ref: `#/$defs/${name}` }))
      }
      for (const name of ["UrlMatch", "AllMatch", "AnyMatch", "NotMatch"]) {
        expect(members).toContain(JSON.stringify({ $ref: `#/$defs/${name}` }))
      }
      const text = (name: string) => JSON.stringify(schema.$defs[name])
      expect(text("PiiMatch")).toContain('"detector":{"type":"string","enum":["pii"]}')
      expect(text("UrlMatch")).toContain('"deny"')
      expect(text("PromptInjectionMatch")).toContain('"threshold"')
      // Composites refer back to the match itself.
      for (const name of ["AllMatch", "AnyMatch", "NotMatch"])
        expect(text(name)).toContain('"$ref":"#/$defs/PolicyMatch"')
    })
  )

  it.effect("the agent profile's canaries round-trip; absent is an empty list; short ones are refused", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const profile = (agentId: string, canaries?: ReadonlyArray<string>) =>
        JSON.stringify({
          agent_id: agentId,
          display_name: "Bot",
          authority: {},
          scope: {},
          tone: { target: "neutral" },
          ...(canaries === undefined ? {} : { canaries })
        })
      const created = yield* createAgent(
        base,
        owner,
        "canary-bot",
        profile("canary-bot", ["CANARY-7f3a9b2c", "zebra-hat-91"])
      )
      expect(created.canaries).toEqual(["CANARY-7f3a9b2c", "zebra-hat-91"])
      const read = yield* owner.api.agents.getAgent({ path: { id: AgentId.make("canary-bot") } })
      expect(read.canaries).toEqual(["CANARY-7f3a9b2c", "zebra-hat-91"])
      expect((yield* createAgent(base, owner, "quiet-bot", profile("quiet-bot"))).canaries).toEqual([])
      const error = yield* expectInvalid(
        createAgent(base, owner, "short-bot", profile("short-bot", ["abc"])),
        "canaries.0"
      )
      expect(error.details?.find((d) => d.path === "canaries.0")?.message).toBe("must be at least 8 characters")
    })
  )
})
