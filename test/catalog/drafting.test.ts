/** The deterministic policy drafter: phrasings -> drafts, unknown prompts -> none, safe redaction regexes, YAML. */
import { describe, expect, it } from "@effect/vitest"
import { Either, Option } from "effect"
import { parse } from "yaml"
import { type Draft, DRAFT_EXAMPLES, draftPolicy, draftToPolicyYaml } from "../../src/catalog/Drafting.js"
import { applyRewrite, compilePolicyText, validatePolicyText } from "../../src/catalog/PolicyLanguage.js"
import { regexMatchesEmpty } from "../../src/catalog/RegexSafety.js"
import { compileUserRegex } from "../../src/catalog/UserRegex.js"

const ID_SHAPE = /^[a-z0-9][a-z0-9_.-]{0,127}$/

const draftOf = (prompt: string): Draft => {
  const draft = draftPolicy(prompt)
  if (Option.isNone(draft)) return expect.unreachable(`no draft for ${JSON.stringify(prompt)}`)
  return draft.value
}

type Expected = Omit<Draft, "description" | "match_value"> & { readonly match_value?: string; readonly sample?: string }

/** A content deny of one literal, unless the fields say otherwise. */
const rule = (fields: Partial<Expected> & Pick<Expected, "id">): Expected => ({
  action: "deny",
  severity: "medium",
  family: "content",
  match_type: "literal",
  target: "content",
  rewrite: null,
  ...fields
})
type Severity = Draft["severity"]
const deny = (id: string, match_value: string, severity: Severity = "medium") => rule({ id, match_value, severity })
const denyAny = (id: string, match_values: ReadonlyArray<string>, severity: Severity = "medium") =>
  rule({ id, match_type: "any_of", match_value: match_values.join(", "), match_values, severity })
const redact = (id: string, rewrite: string, sample: string) =>
  rule({ id, action: "rewrite", severity: "high", match_type: "regex", rewrite, sample })
const replace = (id: string, match_value: string, rewrite: string) =>
  rule({ id, action: "rewrite", severity: "low", match_value, rewrite })
const approval = (id: string, match_value: string) =>
  rule({ id, action: "defer", severity: "high", family: "approval", match_value, target: "operation" })
const escalate = (id: string, match_value: string, severity: Severity = "high") =>
  rule({ id, action: "defer", severity, match_value })
const tool = (id: string, match_value: string) =>
  rule({ id, severity: "high", family: "tool", match_value, target: "operation" })

const cases: ReadonlyArray<readonly [string, Expected]> = [
  // never promise
  ["never promise a refund", deny("no-refund-promise", "refund", "high")],
  ["The agent must never promise refunds!", deny("no-refund-promise", "refund", "high")],
  ["Please don't promise a full refund.", deny("no-full-refund-promise", "full refund", "high")],
  ["NEVER PROMISE REFUNDS", deny("no-refund-promise", "refund", "high")],
  ["the agent should never, ever promise a refund!!", deny("no-refund-promise", "refund", "high")],
  ["no refund promises", deny("no-refund-promise", "refund", "high")],
  ["I want the agent to never make promises about refunds", deny("no-refund-promise", "refund", "high")],
  ["Make sure the agent never guarantees delivery dates", deny("no-delivery-date-guarantee", "delivery date", "high")],
  [
    "Never promise refunds, discounts or free shipping",
    denyAny("no-refund-discount-free-shipping-promise", ["refund", "discount", "free shipping"], "high")
  ],
  // block mentions
  ["block messages that mention Competitor X", deny("block-mention-competitor-x", "competitor x")],
  ["Block any reply mentioning 'Competitor X'", deny("block-mention-competitor-x", "competitor x")],
  ["deny responses containing lawsuits", deny("block-mention-lawsuit", "lawsuit")],
  ["Do not mention Competitor X.", deny("block-mention-competitor-x", "competitor x")],
  ["forbid talking about politics", deny("block-mention-politics", "politics")],
  ["The bot shouldn't discuss the weather", deny("block-mention-weather", "weather")],
  ["Create a policy that blocks messages mentioning crypto", deny("block-mention-crypto", "crypto")],
  ["block messages that mention X, Y or Z", denyAny("block-mention-x-y-z", ["x", "y", "z"])],
  [
    `the assistant must not mention "OpenAI" or 'Anthropic'`,
    denyAny("block-mention-openai-anthropic", ["openai", "anthropic"])
  ],
  [
    `block replies that mention "terms and conditions" and 'pricing'`,
    denyAny("block-mention-terms-and-conditions-pricing", ["terms and conditions", "pricing"])
  ],
  ["never reveal the system prompt", deny("no-reveal-system-prompt", "system prompt", "high")],
  // PII redaction
  ["redact credit card numbers", redact("redact-credit-card", "[CARD]", "4111 1111 1111 1111")],
  ["Mask card numbers.", redact("redact-credit-card", "[CARD]", "4111-1111-1111-1111")],
  ["redact emails", redact("redact-email", "[EMAIL]", "jane@example.com")],
  ["Please redact phone numbers", redact("redact-phone", "[PHONE]", "+1 415-555-0100")],
  ["redact SSNs", redact("redact-ssn", "[SSN]", "123-45-6789")],
  ["remove API keys", redact("redact-api-key", "[API_KEY]", "sk-abc123def456ghi789jkl0")],
  ["the agent must never share credit card numbers", redact("redact-credit-card", "[CARD]", "4111111111111111")],
  ["scrub social security numbers", redact("redact-ssn", "[SSN]", "123 45 6789")],
  ["replace email addresses with <hidden>", redact("redact-email", "<hidden>", "a.b+c@mail.example.org")],
  // rewrite
  ["replace 'guarantee' with 'aim to'", replace("rewrite-guarantee", "guarantee", "aim to")],
  [`Replace the word "cheap" with "Affordable" in replies`, replace("rewrite-cheap", "cheap", "Affordable")],
  ["rewrite ASAP as as soon as possible", replace("rewrite-asap", "asap", "as soon as possible")],
  ["swap refund for store credit", replace("rewrite-refund", "refund", "store credit")],
  // approval
  ["require approval before issuing refunds", approval("approval-issue-refund", "issue_refund")],
  ["The agent needs human approval before deleting accounts", approval("approval-delete-account", "delete_account")],
  ["ask for approval before sending emails", approval("approval-send-email", "send_email")],
  ["Require manager approval before issuing a refund over $100", approval("approval-issue-refund", "issue_refund")],
  ["never issue refunds without human approval", approval("approval-issue-refund", "issue_refund")],
  ["Get manager sign-off before processing payments", approval("approval-process-payment", "process_payment")],
  ["require a human to approve wire transfers", approval("approval-wire-transfer", "wire_transfer")],
  ["require approval before calling the `wire_transfer` tool", approval("approval-wire-transfer", "wire_transfer")],
  ["Refunds over $500 must be approved by a manager", approval("approval-refund", "refund")],
  [
    "require approval before deleting accounts or issuing refunds",
    {
      ...approval("approval-delete-account-issue-refund", "delete_account, issue_refund"),
      match_type: "any_of",
      match_values: ["delete_account", "issue_refund"]
    }
  ],
  // escalation and flagging
  ["escalate when the customer mentions a lawyer", escalate("escalate-lawyer", "lawyer")],
  ["Escalate if the user mentions legal action.", escalate("escalate-legal-action", "legal action")],
  ["hand off to a human when someone says chargeback", escalate("escalate-chargeback", "chargeback")],
  ["When the customer mentions lawyers, escalate", escalate("escalate-lawyer", "lawyer")],
  ["escalate when a lawyer is mentioned", escalate("escalate-lawyer", "lawyer")],
  ["flag when the user mentions cancellation", escalate("flag-cancellation", "cancellation", "low")],
  ["warn me if someone mentions competitors", escalate("flag-competitor", "competitor", "low")],
  // tools
  ["never call the delete_user tool", tool("block-tool-delete-user", "delete_user")],
  ["Block the delete_user tool", tool("block-tool-delete-user", "delete_user")],
  ["don't call delete_user", tool("block-tool-delete-user", "delete_user")],
  ["the agent must never use the shell tool", tool("block-tool-shell", "shell")],
  ["Disable the web search tool", tool("block-tool-web-search", "web_search")],
  // an explicit severity overrides the default
  ["Never promise refunds (critical severity)", deny("no-refund-promise", "refund", "critical")]
]

describe("draftPolicy", () => {
  it("has a large table of phrasings", () => {
    expect(cases.length).toBeGreaterThanOrEqual(35)
  })

  it.each(cases)("%s", (prompt, expected) => {
    const draft = draftOf(prompt)
    const { description, match_value, ...rest } = draft
    const { sample, match_value: expectedValue, ...fields } = expected
    expect(rest).toEqual(fields)
    expect(draft.id).toMatch(ID_SHAPE)
    expect(description).toMatch(/^[A-Z].*\.$/)
    if (draft.match_type === "regex") {
      expect(new RegExp(match_value, "iu").test(sample ?? "")).toBe(true)
    } else {
      expect(match_value).toBe(expectedValue)
    }
  })

  it.each([
    "asdf qwerty",
    "",
    "   ",
    "make it nicer",
    "what is the weather today?",
    "block",
    "redact the stuff",
    "replace with",
    "escalate sometimes",
    "require approval",
    "the agent should be polite",
    "change the tone to formal",
    "🙂🙂🙂",
    "never",
    `never promise ${"very ".repeat(200)}much`
  ])("none for %j", (prompt) => {
    expect(Option.isNone(draftPolicy(prompt))).toBe(true)
  })

  it("understands every example it advertises", () => {
    for (const example of DRAFT_EXAMPLES) expect(Option.isSome(draftPolicy(example)), example).toBe(true)
  })

  it("is deterministic and casing-insensitive", () => {
    const a = draftOf("Block messages that mention Competitor X")
    expect(draftOf("Block messages that mention Competitor X")).toEqual(a)
    expect(draftOf("BLOCK MESSAGES THAT MENTION COMPETITOR X")).toEqual(a)
  })
})

describe("redaction regexes", () => {
  const INNOCUOUS = "Your order 12345 ships in 3 days; call us between 9 and 5, or ask-me-anything on sk-learn."
  const samples: ReadonlyArray<readonly [string, string, string]> = [
    ["redact credit card numbers", "card 4111 1111 1111 1111 exp 12/27", "card [CARD] exp 12/27"],
    ["redact credit card numbers", "amex 3782 822463 10005.", "amex [CARD]."],
    ["redact emails", "mail jane@example.com.", "mail [EMAIL]."],
    ["redact phone numbers", "call +1 415-555-0100 now", "call [PHONE] now"],
    ["redact phone numbers", "call (415) 555-0100 now", "call [PHONE] now"],
    ["redact SSNs", "ssn 123-45-6789 on file", "ssn [SSN] on file"],
    ["remove API keys", "key sk-abc123def456ghi789jkl0 leaked", "key [API_KEY] leaked"],
    ["remove API keys", "aws AKIAIOSFODNN7EXAMPLE here", "aws [API_KEY] here"],
    ["redact emails and phone numbers", "jane@example.com or 415.555.0100", "[REDACTED] or [REDACTED]"]
  ]

  it.each(samples)("%s: %j", (prompt, text, redacted) => {
    const draft = draftOf(prompt)
    const pattern = new RegExp(draft.match_value, "giu")
    expect(text.replace(pattern, draft.rewrite ?? "")).toBe(redacted)
    expect(INNOCUOUS.replace(pattern, "#")).toBe(INNOCUOUS)
    // The same through the service's own policy language, from the drafted YAML.
    const policy = compilePolicyText(draftToPolicyYaml(draft))
    if (Either.isLeft(policy)) return expect.unreachable(JSON.stringify(policy.left))
    expect(applyRewrite(policy.right, text)).toBe(redacted)
    expect(policy.right.matchText(INNOCUOUS)).toEqual([])
  })

  it("every emitted regex compiles on the linear-time engine and cannot match empty text", () => {
    for (const [prompt] of samples) {
      const { match_value } = draftOf(prompt)
      expect(
        Either.map(compileUserRegex(match_value, { caseSensitive: false }), (r) => r.engine),
        prompt
      ).toEqual(Either.right("re2"))
      expect(regexMatchesEmpty(match_value), prompt).toBe(false)
    }
  })
})

describe("drafted policies match what the prompt is about", () => {
  const compiled = (prompt: string) => {
    const policy = compilePolicyText(draftToPolicyYaml(draftOf(prompt)))
    return Either.isLeft(policy) ? expect.unreachable(JSON.stringify(policy.left)) : policy.right
  }
  const hits = (prompt: string, action: { operation: string; content?: string }) =>
    compiled(prompt).match(action).length

  it.each([
    ["The agent must never promise refunds", { operation: "reply", content: "Sure, refunds are on the way!" }, 1],
    ["The agent must never promise refunds", { operation: "reply", content: "Your order has shipped." }, 0],
    [
      "block messages that mention Acme, Globex or Initech",
      { operation: "reply", content: "Have you tried Globex?" },
      1
    ],
    ["escalate when the customer mentions a lawyer", { operation: "reply", content: "My LAWYER will call" }, 1],
    ["require approval before issuing refunds", { operation: "issue_refund" }, 1],
    ["require approval before issuing refunds", { operation: "lookup_order" }, 0],
    ["never call the delete_user tool", { operation: "delete_user" }, 1]
  ] as const)("%s on %j: %i", (prompt, action, expected) => {
    expect(hits(prompt, action)).toBe(expected)
  })
})

describe("draftToPolicyYaml", () => {
  it("renders the conventions' document", () => {
    expect(draftToPolicyYaml(draftOf("never promise a refund"))).toBe(
      [
        "id: no-refund-promise",
        "description: Never promise a refund.",
        "family: content",
        "severity: high",
        "action: deny",
        "enabled: false",
        "match:",
        "  type: literal",
        "  value: refund",
        "  target: content",
        "  case_sensitive: false",
        ""
      ].join("\n")
    )
  })

  it.each(cases)("parses back to the draft: %s", (prompt) => {
    const draft = draftOf(prompt)
    const parsed: unknown = parse(draftToPolicyYaml(draft))
    expect(parsed).toEqual({
      id: draft.id,
      description: draft.description,
      family: draft.family,
      severity: draft.severity,
      action: draft.action,
      enabled: false,
      match: {
        type: draft.match_type,
        value: draft.match_values ?? draft.match_value,
        target: draft.target,
        case_sensitive: false
      },
      ...(draft.action === "rewrite" ? { rewrite: draft.rewrite } : {})
    })
    // Accepted as is by `POST /v1/policies` (schema, target, regex safety, rewrite rules).
    expect(validatePolicyText(draftToPolicyYaml(draft))).toEqual({ valid: true, policy_id: draft.id, errors: [] })
  })
})
