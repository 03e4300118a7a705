/**
 * Guard packs shipped with the service: vetted sets of ordinary policy
 * documents built on the built-in detectors (docs/policies.md, "Guard
 * packs"). Ids are `<pack>.<rule>` so a pack's policies are easy to find and
 * never collide with another pack's. Every document here must validate;
 * test/catalog/packs.test.ts checks each one against the policy language.
 */

/** A policy document (PolicyDocument's shape, checked by the policy language in tests). */
export interface PackDocument {
  readonly id: string
  readonly description: string
  readonly family: "content"
  readonly severity: "low" | "medium" | "high" | "critical"
  readonly action: "permit" | "deny" | "defer" | "rewrite"
  readonly rewrite?: string
  readonly applies_to?: ReadonlyArray<"input.received" | "tool.result" | "output.proposed">
  readonly mode?: "observe" | "enforce"
  readonly match: { readonly type: "detector"; readonly detector: string; readonly target: "content" } & {
    readonly [option: string]: unknown
  }
}

export interface GuardPack {
  readonly name: string
  readonly description: string
  readonly policies: ReadonlyArray<PackDocument>
}

const INBOUND = ["input.received", "tool.result"] as const

export const GUARD_PACKS: ReadonlyArray<GuardPack> = [
  {
    name: "pii-basic",
    description:
      "Personal data: payment cards (Luhn) and IBANs (checksum) are masked in what the agent reads and says; US SSNs in replies and tool calls are denied; e-mail addresses and phone numbers in replies are recorded (observe).",
    policies: [
      {
        id: "pii-basic.financial",
        description: "Payment card or IBAN: masked",
        family: "content",
        severity: "high",
        action: "rewrite",
        rewrite: "[REDACTED]",
        applies_to: [...INBOUND, "output.proposed"],
        match: { type: "detector", detector: "pii", categories: ["card", "iban"], target: "content" }
      },
      {
        id: "pii-basic.ssn",
        description: "US Social Security number in what the agent proposes",
        family: "content",
        severity: "high",
        action: "deny",
        match: { type: "detector", detector: "pii", categories: ["ssn"], target: "content" }
      },
      {
        id: "pii-basic.contact",
        description: "E-mail address or phone number in what the agent proposes (recorded only)",
        family: "content",
        severity: "low",
        action: "rewrite",
        rewrite: "[CONTACT]",
        mode: "observe",
        match: { type: "detector", detector: "pii", categories: ["email", "phone"], target: "content" }
      }
    ]
  },
  {
    name: "secrets",
    description:
      "Credentials: API keys, JWTs, PEM private keys and cloud credentials are masked before they reach the model, and a reply or tool call carrying one is denied.",
    policies: [
      {
        id: "secrets.inbound",
        description: "Credential in text entering the agent: masked before it reaches the model",
        family: "content",
        severity: "high",
        action: "rewrite",
        rewrite: "[SECRET]",
        applies_to: [...INBOUND],
        match: { type: "detector", detector: "secret", target: "content" }
      },
      {
        id: "secrets.outbound",
        description: "Credential in what the agent proposes",
        family: "content",
        severity: "critical",
        action: "deny",
        match: { type: "detector", detector: "secret", target: "content" }
      }
    ]
  },
  {
    name: "prompt-injection",
    description:
      "Instruction overrides, role hijacks, fake system messages, jailbreak framings and exfiltration requests, in ten languages and obfuscated: denied in user input and in tool results (indirect injection).",
    policies: [
      {
        id: "prompt-injection.input",
        description: "Prompt injection or jailbreak attempt in user input",
        family: "content",
        severity: "high",
        action: "deny",
        applies_to: ["input.received"],
        match: { type: "detector", detector: "prompt_injection", threshold: 0.5, target: "content" }
      },
      {
        id: "prompt-injection.tool-result",
        description: "Instructions addressed to the agent inside a tool result (indirect prompt injection)",
        family: "content",
        severity: "critical",
        action: "deny",
        applies_to: ["tool.result"],
        match: { type: "detector", detector: "prompt_injection", threshold: 0.5, target: "content" }
      }
    ]
  },
  {
    name: "system-prompt-leak",
    description:
      "A reply that reproduces the agent profile's system prompt (spelled out, spaced or encoded) or any of its canaries is denied.",
    policies: [
      {
        id: "system-prompt-leak.reply",
        description: "Reply reproduces the system prompt or a canary",
        family: "content",
        severity: "critical",
        action: "deny",
        match: { type: "detector", detector: "system_prompt_leak", target: "content" }
      }
    ]
  },
  {
    name: "exfiltration",
    description:
      "A reply carrying an image a chat UI would fetch by itself (markdown or HTML), the channel an injected instruction uses to send data out in the image's URL, is denied; add your image hosts to the policy's allow list.",
    policies: [
      {
        id: "exfiltration.image",
        description: "Reply embeds an image from an outside host (data may leave in its URL when it is shown)",
        family: "content",
        severity: "high",
        action: "deny",
        applies_to: ["output.proposed"],
        match: { type: "detector", detector: "url", images_only: true, target: "content" }
      }
    ]
  }
]

export const findPack = (name: string): GuardPack | undefined => GUARD_PACKS.find((pack) => pack.name === name)
