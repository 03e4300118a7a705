/** The redaction rules, table-driven: what each detector replaces, and what it must leave alone. */
import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { digestOf, keepJson, keepString, redactText } from "../../src/privacy/Redaction.js"

const cases: ReadonlyArray<readonly [string, string, string]> = [
  ["email", "write to jane.doe+billing@example.co.uk today", "write to [EMAIL] today"],
  ["phone (international)", "call +1 415-555-0132 now", "call [PHONE] now"],
  ["phone (national, parentheses)", "call (415) 555-0132", "call [PHONE]"],
  ["phone (German)", "Tel. +49 30 1234567", "Tel. [PHONE]"],
  ["card (Visa, Luhn-valid, spaced)", "card 4111 1111 1111 1111 exp 12/29", "card [CARD] exp 12/29"],
  ["card (Mastercard, dashes)", "5555-5555-5555-4444", "[CARD]"],
  ["card (Amex, 15 digits)", "pay with 378282246310005", "pay with [CARD]"],
  ["IBAN (DE, compact)", "IBAN DE89370400440532013000 please", "IBAN [IBAN] please"],
  ["IBAN (GB, spaced)", "send to GB82 WEST 1234 5698 7654 32", "send to [IBAN]"],
  ["OpenAI key", "use sk-proj-AbC123dEf456GhI789jKl0", "use [API_KEY]"],
  ["Anthropic key", "sk-ant-api03-AbCdEf0123456789XyZ_abc", "[API_KEY]"],
  ["guardrail key", "Bearer gr_live_q8Zt0cV3mN5bX1aS7dF2gH4jK6lP9oI", "Bearer [API_KEY]"],
  ["AWS access key id", "AKIAIOSFODNN7EXAMPLE is mine", "[API_KEY] is mine"],
  ["GitHub token", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "[API_KEY]"],
  ["generic key after key=", "curl ...?key=9fJ2kQ7xL0pZ3vB8nM1c", "curl ...?key=[API_KEY]"],
  ["generic api_key: value", 'api_key: "Zx81Lp0Qr7Tn2Wv5Ym9K"', 'api_key: "[API_KEY]"'],
  [
    "JWT",
    "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok",
    "token [JWT] ok"
  ]
]

const untouched: ReadonlyArray<readonly [string, string]> = [
  ["card number failing Luhn", "4111 1111 1111 1112"],
  ["IBAN failing mod-97", "DE89370400440532013001"],
  ["a date", "ships on 2026-11-22"],
  ["a timestamp", "2026-11-22T10:00:00.000Z"],
  ["a short number", "order 12345 and room 42"],
  ["a price", "costs 1299.99 USD"],
  ["key= with a low-entropy value", "key=aaaaaaaaaaaaaaaaaaaa"],
  ["plain prose", "Your order ships tomorrow; thanks for waiting."],
  ["a guardrail id", "trc_0193a5b2c3d47e8f9a0b1c2d3e4f5a6b"]
]

describe("redactText", () => {
  for (const [name, input, expected] of cases) {
    it(`replaces ${name}`, () => {
      expect(redactText(input)).toBe(expected)
    })
  }
  for (const [name, input] of untouched) {
    it(`leaves ${name} alone`, () => {
      expect(redactText(input)).toBe(input)
    })
  }
  it("replaces every occurrence of several kinds in one text", () => {
    expect(redactText("a@b.io, +33 1 23 45 67 89, 4242424242424242, c@d.org")).toBe("[EMAIL], [PHONE], [CARD], [EMAIL]")
  })
})

describe("what each mode keeps", () => {
  const text = "mail jane@example.com"
  const digest = createHash("sha256").update(text).digest("hex")
  it("raw_allowed keeps the text", () => {
    expect(keepString("raw_allowed", text)).toBe(text)
    expect(keepJson("raw_allowed", { a: [text] })).toEqual({ a: [text] })
  })
  it("redacted redacts strings inside JSON, keys and non-strings stay", () => {
    expect(keepJson("redacted", { "jane@example.com": [text, 4, true, null] })).toEqual({
      "jane@example.com": ["mail [EMAIL]", 4, true, null]
    })
  })
  it("metadata_only keeps only the SHA-256 digest and the length", () => {
    expect(digestOf(text)).toEqual({ sha256: digest, length: text.length })
    expect(keepJson("metadata_only", text)).toEqual({ sha256: digest, length: 21 })
    expect(keepString("metadata_only", text)).toBe(`[sha256:${digest} length:21]`)
    expect(JSON.stringify(keepJson("metadata_only", { note: text }))).not.toContain("jane")
  })
})
