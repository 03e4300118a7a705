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
  ["a header's key", "X-Api-Key: 9fJ2kQ7xL0pZ3vB8nM1c", "X-Api-Key: [API_KEY]"],
  ["a prefixed password", "db_password='Zx81Lp0Qr7Tn2Wv5Ym9K'", "db_password='[API_KEY]'"],
  ["card followed by expiry and CVV", "Card: 4111 1111 1111 1111 12/26 CVV 123", "Card: [CARD] 12/26 CVV 123"],
  ["card followed by its CVV", "pay 4111 1111 1111 1111 123 now", "pay [CARD] 123 now"],
  ["card after a short number", "room 12 5555-5555-5555-4444", "room 12 [CARD]"],
  ["IBAN followed by its BIC", "IBAN DE89370400440532013000 BIC COBADEFFXXX", "IBAN [IBAN] BIC COBADEFFXXX"],
  ["grouped IBAN followed by a currency", "IBAN: DE89 3704 0044 0532 0130 00 EUR 120", "IBAN: [IBAN] EUR 120"],
  ["e-mail after a stray @", "x a@b@c.com y", "x a@[EMAIL] y"],
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
  ["a list of short numbers", "numbers 100 200 300 400 500 600 700 800"],
  ["key inside a word", "monkey=Zx81Lp0Qr7Tn2Wv5Ym9K"],
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

describe("redactText on large texts", () => {
  // Each of these took minutes at 1 MiB when a pattern retried from every position (quadratic); now milliseconds
  // (bench/redaction.ts prints the figures; a speed is measured there, never asserted here). The content cap is
  // 4 MiB and redaction runs on the event loop, so a slow text stalled every request. None holds anything to redact.
  const shapes = ["a", "a-b-", "a.", "x_", "1", "a@b.", "key ", "DE89 ", "4111 "]
  for (const shape of shapes) {
    it(`leaves 1 MiB of ${JSON.stringify(shape)} as it is`, () => {
      const text = shape.repeat(Math.ceil(1_048_576 / shape.length))
      expect(redactText(text)).toBe(text)
    })
  }
  // Digit runs that run into a letter: each was tried in every split into 2-4 digit parts (seconds per 4 MiB).
  for (const shape of ["1234567890123456789012x ", "+1 (12) 1234567890123456789012x "]) {
    it(`leaves 4 MiB of ${JSON.stringify(shape)} as it is`, () => {
      const text = shape.repeat(Math.ceil(4_194_304 / shape.length))
      expect(redactText(text)).toBe(text)
    })
  }
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
  it("redacted replaces a card or phone number sent as a JSON number, other numbers stay", () => {
    const kept = keepJson("redacted", { card: 4111111111111111, phone: 4155550132, amount: 4999, ratio: 0.25 })
    expect(kept).toEqual({ card: "[CARD]", phone: "[PHONE]", amount: 4999, ratio: 0.25 })
    expect(keepJson("redacted", [5555555555554444])).toEqual(["[CARD]"])
  })
  it("metadata_only keeps only the SHA-256 digest and the length", () => {
    expect(digestOf(text)).toEqual({ sha256: digest, length: text.length })
    expect(keepJson("metadata_only", text)).toEqual({ sha256: digest, length: 21 })
    expect(keepString("metadata_only", text)).toBe(`[sha256:${digest} length:21]`)
    expect(JSON.stringify(keepJson("metadata_only", { note: text }))).not.toContain("jane")
  })
})
