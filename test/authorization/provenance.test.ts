/**
 * Provenance without labels, the pure parts: which values a text yields and how they are
 * normalised, the least trusted of several origins, and how the param and flow checkers report an
 * inferred label. The service around them: test/authorization-http/provenance-http.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { flowChecker, leastTrusted } from "../../src/authorization/checkers/Flow.js"
import { paramChecker } from "../../src/authorization/checkers/Param.js"
import {
  fingerprintOf,
  MAX_VALUES_PER_EVENT,
  salientValues,
  valuesOfParam,
  workspaceKey
} from "../../src/authorization/Fingerprints.js"
import type { CheckContext, ParamSource } from "../../src/authorization/Pipeline.js"
import type { LabelPolicyRow, ToolMetadataRow } from "../../src/catalog/Repo.js"
import { label } from "./label-fixtures.js"

const valuesOf = (text: string) => [...salientValues(text, new Set())]

describe("salient values", () => {
  it("finds e-mails, IBANs, phone numbers, account numbers, URLs, tokens and quoted strings, normalised", () => {
    const values = valuesOf(
      "Pay DE89 3704 0044 0532 0130 00, mail Alice.Smith@Example.COM, call +49 30 1234 5678, " +
        'account 1234-5678-9012, see HTTPS://Shop.Example.com/Pay/ and ref tok_9f8a7b6c5d4e3f2a1b0c. Payee "Acme  Trading Ltd".'
    )
    expect(values).toEqual(
      expect.arrayContaining([
        "DE89370400440532013000",
        "alice.smith@example.com",
        "493012345678",
        "123456789012",
        "https://shop.example.com/Pay",
        "tok_9f8a7b6c5d4e3f2a1b0c",
        "acme trading ltd"
      ])
    )
  })

  it("a param value yields the same values however it is formatted", () => {
    expect(valuesOfParam("DE89370400440532013000")).toContain("DE89370400440532013000")
    expect(valuesOfParam("alice.smith@example.com")).toContain("alice.smith@example.com")
    expect(valuesOfParam("Acme Trading Ltd")).toContain("acme trading ltd")
    expect(valuesOfParam("4930 1234 5678")).toContain("493012345678")
  })

  it("leaves dates, short numbers and short words alone, and takes at most MAX_VALUES_PER_EVENT", () => {
    expect(valuesOf("On 2026-11-25 pay 120 EUR, ok?")).toEqual([])
    expect([...valuesOfParam("EUR")]).toEqual([])
    const many = Array.from({ length: 400 }, (_, i) => `user${i}@example.com`).join(" ")
    expect(valuesOf(many)).toHaveLength(MAX_VALUES_PER_EVENT)
  })

  it("fingerprints are keyed per workspace and never contain the value", () => {
    const secret = "service-secret-0123456789abcdefghijklmnopqrstuvwxyz"
    const a = fingerprintOf(workspaceKey(secret, "ws_a"), "DE89370400440532013000")
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(a).toBe(fingerprintOf(workspaceKey(secret, "ws_a"), "DE89370400440532013000"))
    expect(a).not.toBe(fingerprintOf(workspaceKey(secret, "ws_b"), "DE89370400440532013000"))
    expect(a).not.toBe(fingerprintOf(workspaceKey(`${secret}!`, "ws_a"), "DE89370400440532013000"))
  })
})

describe("least trusted origin", () => {
  const none = new Map<string, LabelPolicyRow>()
  it("without label policies: the untrusted defaults, then any origin below user", () => {
    expect(leastTrusted(none, ["user", "email"])).toBe("email")
    expect(leastTrusted(none, ["user", "system"])).toBe("system")
    expect(leastTrusted(none, ["user"])).toBe("user")
    expect(leastTrusted(none, [])).toBeUndefined()
    expect(leastTrusted(none, ["web", "email"])).toBe("email") // equally untrusted: by name
  })

  it("label policies decide: low integrity, then the lower numeric trust", () => {
    const labels = new Map([
      ["email", label("email", { integrity: "high" })],
      ["partner", label("partner", { trust: 0.7 })],
      ["crm", label("crm", { trust: 0.9 })],
      ["user", label("user", { integrity: "low" })]
    ])
    expect(leastTrusted(labels, ["email", "user"])).toBe("user")
    expect(leastTrusted(labels, ["crm", "partner", "email"])).toBe("partner")
  })
})

const payment: ToolMetadataRow = {
  tool: "send_money",
  enabled: true,
  version: 1,
  metadata: {
    tool: "send_money",
    reversible: false,
    side_effect: "payment",
    params: [
      {
        path: "recipient",
        role: "authority_bearing",
        allowed_sources: [{ kind: "input", origin: "user", source_id: "*" }]
      }
    ]
  }
}

const context = (sources: ReadonlyArray<ParamSource>): CheckContext => ({
  agentId: "pay-bot",
  kind: "output.proposed",
  action: { operation: "send_money", params: { recipient: { iban: "DE89370400440532013000" } }, sources },
  agent: undefined,
  policies: [],
  labelPolicies: new Map(),
  tools: new Map([["send_money", payment]]),
  granted: false
})

describe("checkers over inferred labels", () => {
  const inferred: ParamSource = { path: "recipient.iban", origin: "email", source_id: "inferred", inferred: true }

  it("param: an inferred label inside an object param counts for it, with inferred: true", () => {
    const [finding] = paramChecker.check(context([inferred]))
    expect(finding?.evidence).toEqual({
      path: "recipient",
      origin: "email",
      source_id: "inferred",
      allowed: [{ kind: "input", origin: "user", source_id: "*" }],
      inferred: true
    })
    // A caller's label inside the param is not read for it (only its own path, as before).
    const given = { ...inferred, inferred: false, origin: "web" }
    expect(paramChecker.check(context([given]))[0]?.evidence).toMatchObject({ origin: null })
    expect(paramChecker.check(context([{ ...inferred, origin: "user" }]))).toEqual([])
  })

  it("flow: an inferred untrusted origin drives the integrity rule, with inferred: true", () => {
    expect(flowChecker.check(context([inferred])).map((finding) => [finding.requirement_id, finding.evidence])).toEqual(
      [
        [
          "flow:integrity:email->send_money",
          {
            origin: "email",
            tool: "send_money",
            paths: ["recipient.iban"],
            labelled: false,
            reversible: false,
            inferred: true
          }
        ]
      ]
    )
  })
})
