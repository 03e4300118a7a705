/** Param checker: authority-bearing params need an allowed source label; declared limits hold. */
import { describe, expect, it } from "@effect/vitest"
import { paramChecker } from "../../src/authorization/checkers/Param.js"
import type { CheckContext, ParamSource } from "../../src/authorization/Pipeline.js"
import type { ToolMetadataRow } from "../../src/catalog/Repo.js"

const sendPayment = {
  tool: "send_payment",
  reversible: false,
  side_effect: "payment",
  params: [
    {
      path: "recipient.iban",
      role: "authority_bearing",
      allowed_sources: [{ kind: "input", origin: "user", source_id: "*" }]
    },
    { path: "amount", role: "authority_bearing", limit: { max: 500 } },
    { path: "fee", role: "authority_bearing", limit: 5 },
    { path: "memo", role: "data", limit: { max_length: 10 } },
    { path: "currency", role: "authority_bearing", limit: { one_of: ["EUR", "USD"] } },
    {
      path: "approvers.0.email",
      role: "authority_bearing",
      allowed_sources: [{ kind: "directory", origin: "system", source_id: "hr-directory" }]
    },
    { path: "note", limit: { max_length: 1 } } // no role: ignored
  ]
}

const rows: ReadonlyArray<ToolMetadataRow> = [
  { tool: "send_payment", enabled: true, version: 1, metadata: sendPayment },
  { tool: "old_payment", enabled: false, version: 1, metadata: { ...sendPayment, tool: "old_payment" } }
]

const context = (
  operation: string,
  params: Record<string, unknown>,
  sources?: ReadonlyArray<ParamSource>
): CheckContext => ({
  agentId: "support-bot",
  kind: "output.proposed",
  action: { operation, params, sources },
  agent: undefined,
  policies: [],
  labelPolicies: new Map(),
  tools: new Map(rows.map((row) => [row.tool, row])),
  granted: false
})

const user = (path: string): ParamSource => ({ path, origin: "user", source_id: "chat-1" })
const web = (path: string): ParamSource => ({ path, origin: "web", source_id: "https://evil.example" })
const iban = { iban: "DE89370400440532013000" }

// `found` lists [requirement_id, reason fragment] per finding, in order.
const cases: ReadonlyArray<{
  readonly name: string
  readonly context: CheckContext
  readonly found: ReadonlyArray<readonly [string, string]>
}> = [
  {
    name: "recipient typed by the user is allowed",
    context: context("send_payment", { recipient: iban }, [user("recipient.iban")]),
    found: []
  },
  {
    name: "recipient taken from a web page is denied",
    context: context("send_payment", { recipient: iban }, [web("recipient.iban")]),
    found: [["param:send_payment.recipient.iban", 'came from origin "web"']]
  },
  {
    name: "recipient without any source label is denied",
    context: context("send_payment", { recipient: iban }),
    found: [["param:send_payment.recipient.iban", "has no source label"]]
  },
  {
    name: "a label on another path does not cover the param",
    context: context("send_payment", { recipient: iban }, [user("recipient")]),
    found: [["param:send_payment.recipient.iban", "has no source label"]]
  },
  {
    name: "a value mixed from user and web is only as trusted as the web part",
    context: context("send_payment", { recipient: iban }, [user("recipient.iban"), web("recipient.iban")]),
    found: [["param:send_payment.recipient.iban", 'origin "web"']]
  },
  {
    name: "an absent authority-bearing param needs nothing",
    context: context("send_payment", { amount: 10 }),
    found: []
  },
  {
    name: "amount above {max} is denied even without allowed_sources",
    context: context("send_payment", { amount: 900 }),
    found: [["param:send_payment.amount", "exceeds limit (900 > 500)"]]
  },
  { name: "amount at {max} is fine", context: context("send_payment", { amount: 500 }), found: [] },
  {
    name: "a numeric string cannot slip past {max}",
    context: context("send_payment", { amount: "900" }),
    found: [["param:send_payment.amount", "exceeds limit"]]
  },
  // What a max cannot read as a number may still be read as one past it by the tool: denied.
  ...["900 USD", "Infinity", "1e3x", [900], { value: 900 }, true, null].map((amount) => ({
    name: `an amount the max cannot read (${JSON.stringify(amount)}) is denied`,
    context: context("send_payment", { amount }),
    found: [["param:send_payment.amount", "is not a number a limit of 500 can check"]] as const
  })),
  {
    name: "a list of strings cannot slip past max_length",
    context: context("send_payment", { memo: ["thank you for lunch"] }),
    found: [["param:send_payment.memo", "is not text a max_length of 10 can check"]]
  },
  {
    name: "a number over max_length is measured as its digits",
    context: context("send_payment", { memo: 12345678901 }),
    found: [["param:send_payment.memo", "exceeds limit (11 characters > 10)"]]
  },
  {
    name: "a plain number limit is a max",
    context: context("send_payment", { fee: 6 }),
    found: [["param:send_payment.fee", "exceeds limit (6 > 5)"]]
  },
  {
    name: "max_length counts characters, not UTF-16 units",
    context: context("send_payment", { memo: "😀😀😀😀😀😀" }),
    found: []
  },
  {
    name: "a string over max_length is denied (any role)",
    context: context("send_payment", { memo: "thank you for lunch" }),
    found: [["param:send_payment.memo", "exceeds limit (19 characters > 10)"]]
  },
  {
    name: "a value outside one_of is denied",
    context: context("send_payment", { currency: "GBP" }),
    found: [["param:send_payment.currency", "is not one of the allowed values"]]
  },
  { name: "a value in one_of is fine", context: context("send_payment", { currency: "EUR" }), found: [] },
  {
    name: "an indexed path with the allowed source id",
    context: context("send_payment", { approvers: [{ email: "cfo@example.com" }] }, [
      { path: "approvers.0.email", origin: "system", source_id: "hr-directory" }
    ]),
    found: []
  },
  {
    name: "an indexed path with the right origin but another source id is denied",
    context: context("send_payment", { approvers: [{ email: "cfo@example.com" }] }, [
      { path: "approvers.0.email", origin: "system", source_id: "scratchpad" }
    ]),
    found: [["param:send_payment.approvers.0.email", 'origin "system"']]
  },
  {
    name: "source and limit findings add up",
    context: context("send_payment", { recipient: iban, amount: 9000 }, [web("recipient.iban")]),
    found: [
      ["param:send_payment.recipient.iban", "web"],
      ["param:send_payment.amount", "exceeds limit"]
    ]
  },
  {
    name: "a param without a role is not checked",
    context: context("send_payment", { note: "too long" }),
    found: []
  },
  { name: "a tool not in the registry", context: context("wire_money", { amount: 1e9 }), found: [] },
  { name: "a disabled tool", context: context("old_payment", { amount: 1e9 }), found: [] },
  { name: "a reply", context: context("reply", { amount: 1e9 }), found: [] }
]

describe("param checker", () => {
  it.each(cases)("$name", ({ context, found }) => {
    const findings = paramChecker.check(context)
    expect(findings.map((f) => f.requirement_id)).toEqual(found.map(([id]) => id))
    findings.forEach((finding, i) => {
      expect(finding.reason).toContain(found[i]![1])
      expect(finding).toMatchObject({ effect: "deny", severity: "high", policy_id: null })
    })
  })

  it("names the origin seen and the allowed sources in the evidence", () => {
    const [finding] = paramChecker.check(context("send_payment", { recipient: iban }, [web("recipient.iban")]))
    expect(finding?.evidence).toEqual({
      path: "recipient.iban",
      origin: "web",
      source_id: "https://evil.example",
      allowed: sendPayment.params[0]!.allowed_sources
    })
    const [unlabelled] = paramChecker.check(context("send_payment", { recipient: iban }))
    expect(unlabelled?.evidence).toMatchObject({ path: "recipient.iban", origin: null })
  })

  it("reports the limit and the observed value", () => {
    const [finding] = paramChecker.check(context("send_payment", { amount: 900 }))
    expect(finding?.evidence).toEqual({ path: "amount", value: 900, limit: { max: 500 } })
  })
})
