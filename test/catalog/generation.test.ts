/**
 * Guardrails generated from an agent profile (src/catalog/Generation.ts):
 * the mapping from profile fields to policies, ids that are stable and valid
 * policy ids (hashed when long), documents that pass the same validation as
 * authored ones, and duplicates that collapse while distinct phrases do not.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { parse } from "yaml"
import { type GeneratedPolicy, generateFromProfile, type ProfileForGeneration } from "../../src/catalog/Generation.js"
import { validatePolicy, validatePolicyText } from "../../src/catalog/PolicyLanguage.js"

const POLICY_ID = /^[a-z0-9][a-z0-9_.-]{0,127}$/
const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

const profile = (
  fields: Partial<Omit<ProfileForGeneration, "agent_id">> & { agent_id?: string } = {}
): ProfileForGeneration => ({
  agent_id: fields.agent_id ?? "support-bot",
  authority: fields.authority ?? { cannot_promise: [] },
  scope: fields.scope ?? { out_of_scope: [] },
  tone: fields.tone ?? { forbidden: [] },
  escalation_triggers: fields.escalation_triggers ?? [],
  workflow_requirements: fields.workflow_requirements ?? []
})

const FULL = profile({
  authority: { cannot_promise: ["a full refund", "free shipping forever"] },
  scope: { out_of_scope: ["legal advice"] },
  tone: { forbidden: ["stupid"] },
  escalation_triggers: ["lawyer"],
  workflow_requirements: [
    { name: "verify_identity", required_before: ["issue_refund"], sensitive_steps: ["close_account"] }
  ]
})

const idOf = (policy: GeneratedPolicy) => String(policy.document["id"])
const matchOf = (policy: GeneratedPolicy) =>
  policy.document["match"] as { type: string; value: unknown; target: string; case_sensitive?: boolean }

/** Every check a generated policy must pass, whatever the profile. */
const expectSound = (generated: ReadonlyArray<GeneratedPolicy>, agentId: string) => {
  const ids = generated.map(idOf)
  expect(new Set(ids).size, "ids are unique").toBe(ids.length)
  for (const policy of generated) {
    const id = idOf(policy)
    expect(id, id).toMatch(POLICY_ID)
    expect(id.length).toBeLessThanOrEqual(128)
    expect(validatePolicy(policy.document), JSON.stringify(policy.document)).toEqual({
      valid: true,
      policy_id: id,
      errors: []
    })
    // The stored text is the same document, and validates on its own.
    expect(parse(policy.sourceYaml)).toEqual(policy.document)
    expect(validatePolicyText(policy.sourceYaml).valid).toBe(true)
    expect(policy.document).toMatchObject({ enabled: false, owner_agent_id: agentId })
  }
}

describe("generateFromProfile", () => {
  it("maps each profile field to its policy kind", () => {
    const generated = generateFromProfile(FULL)
    expect(generated).toHaveLength(7)
    expectSound(generated, "support-bot")
    const byValue = (value: string) => {
      const found = generated.filter((policy) => matchOf(policy).value === value)
      expect(found, value).toHaveLength(1)
      return found[0]!.document
    }
    for (const phrase of ["a full refund", "free shipping forever"]) {
      expect(byValue(phrase)).toMatchObject({
        family: "content",
        action: "deny",
        severity: "high",
        match: { type: "literal", target: "content" }
      })
    }
    expect(byValue("legal advice")).toMatchObject({ family: "content", action: "defer", match: { target: "content" } })
    expect(byValue("stupid")).toMatchObject({ family: "content", action: "rewrite", rewrite: "[removed]" })
    expect(byValue("lawyer")).toMatchObject({ family: "content", action: "defer", escalate: true })
    expect(byValue("close_account")).toMatchObject({
      family: "approval",
      action: "defer",
      match: { target: "operation" }
    })
    expect(byValue("issue_refund")).toMatchObject({
      family: "flow",
      action: "defer",
      requires: "verify_identity",
      match: { target: "operation" }
    })
  })

  it("an empty profile generates nothing", () => {
    expect(generateFromProfile(profile())).toEqual([])
  })

  it("ids are stable: the same profile gives the same ids and texts, whatever else the profile lists", () => {
    const first = generateFromProfile(FULL)
    expect(generateFromProfile(FULL)).toEqual(first)
    // An id depends on the agent, the kind and the phrase only: not on position or the other phrases.
    const reordered = generateFromProfile({
      ...FULL,
      authority: { cannot_promise: ["something new", "free shipping forever", "a full refund"] }
    })
    const reorderedIds = new Set(reordered.map(idOf))
    for (const id of first.map(idOf)) expect(reorderedIds.has(id), id).toBe(true)
    expect(first.map(idOf)).toContain("support-bot.cannot-promise.a-full-refund")
  })

  it("the same phrase under different kinds gives different policies", () => {
    const generated = generateFromProfile(
      profile({
        authority: { cannot_promise: ["refund"] },
        scope: { out_of_scope: ["refund"] },
        tone: { forbidden: ["refund"] },
        escalation_triggers: ["refund"],
        workflow_requirements: [{ name: "refund", required_before: ["refund"], sensitive_steps: ["refund"] }]
      })
    )
    expect(generated).toHaveLength(6)
    expectSound(generated, "support-bot")
  })

  it("long phrases get hashed ids of at most 128 characters; phrases sharing a long prefix stay apart", () => {
    const prefix = "never promise that the company will ".repeat(5)
    const long = [`${prefix}refund everything`, `${prefix}replace everything`]
    const generated = generateFromProfile(profile({ authority: { cannot_promise: long } }))
    expect(generated).toHaveLength(2)
    expectSound(generated, "support-bot")
    for (const policy of generated) {
      expect(idOf(policy).length).toBe(128)
      expect(idOf(policy)).toMatch(/\.[0-9a-f]{10}$/)
    }
    expect(new Set(generated.map(idOf)).size).toBe(2)
    // Stable too.
    expect(generateFromProfile(profile({ authority: { cannot_promise: long } })).map(idOf)).toEqual(generated.map(idOf))
    // The longest agent id and a long requirement name still fit.
    const longAgent = "a".repeat(128)
    const steps = generateFromProfile(
      profile({
        agent_id: longAgent,
        workflow_requirements: [{ name: "n".repeat(200), required_before: ["s".repeat(200)], sensitive_steps: ["t"] }]
      })
    )
    expect(steps).toHaveLength(2)
    expectSound(steps, longAgent)
  })

  it("duplicates collapse: a phrase listed twice, or in another case, gives one policy", () => {
    const generated = generateFromProfile(
      profile({
        authority: { cannot_promise: ["a full refund", "a full refund", "A Full Refund"] },
        tone: { forbidden: ["stupid", "stupid"] },
        workflow_requirements: [
          { name: "verify", required_before: ["pay", "pay"], sensitive_steps: ["pay"] },
          { name: "verify", required_before: ["pay"], sensitive_steps: [] }
        ]
      })
    )
    const byFamilyAction = generated.map((policy) => `${policy.document["family"]}/${policy.document["action"]}`).sort()
    expect(byFamilyAction).toEqual(["approval/defer", "content/deny", "content/rewrite", "flow/defer"])
    expectSound(generated, "support-bot")
  })

  it("distinct phrases never collapse, even when they slug alike (non-Latin script, punctuation)", () => {
    const phrases = [
      "全额退款",
      "终身保修",
      "полный возврат",
      "a full refund!",
      "a full refund?",
      "100% refund",
      "100 refund"
    ]
    const generated = generateFromProfile(profile({ authority: { cannot_promise: phrases } }))
    expect(generated.map((policy) => matchOf(policy).value).sort()).toEqual([...phrases].sort())
    expectSound(generated, "support-bot")
  })

  it("an empty or blank phrase never yields an invalid policy", () => {
    const generated = generateFromProfile(
      profile({
        authority: { cannot_promise: ["", "a full refund"] },
        escalation_triggers: [""],
        workflow_requirements: [{ name: "", required_before: [""], sensitive_steps: [""] }]
      })
    )
    expectSound(generated, "support-bot")
    expect(generated.some((policy) => matchOf(policy).value === "a full refund")).toBe(true)
  })

  it("different agents never share a policy id, even when their ids differ only in punctuation or case", () => {
    const agents = ["support_bot", "support-bot", "support.bot", "Support-Bot", "SUPPORT_BOT"]
    const ids = agents.flatMap((agentId) =>
      generateFromProfile(profile({ agent_id: agentId, authority: { cannot_promise: ["a full refund"] } })).map(idOf)
    )
    expect(new Set(ids).size, ids.join(", ")).toBe(agents.length)
  })

  it("property: every profile yields sound policies, one per distinct phrase of each kind", () => {
    const agentId = fc.stringMatching(AGENT_ID)
    const phrase = fc.oneof(
      fc.string({ minLength: 1, maxLength: 40 }).filter((text) => text.trim() !== ""),
      fc.constantFrom("a full refund", "legal advice", "stupid", "lawyer", "Refund", "refund")
    )
    const phrases = fc.array(phrase, { maxLength: 5 })
    fc.assert(
      fc.property(agentId, phrases, phrases, phrases, (agent, cannot, outOfScope, forbidden) => {
        const input = profile({
          agent_id: agent,
          authority: { cannot_promise: cannot },
          scope: { out_of_scope: outOfScope },
          tone: { forbidden }
        })
        const generated = generateFromProfile(input)
        expectSound(generated, agent)
        // Phrases equal ignoring case are one policy (matching is case-insensitive); others are not merged.
        const distinct = (list: ReadonlyArray<string>) => new Set(list.map((text) => text.toLowerCase())).size
        expect(generated).toHaveLength(distinct(cannot) + distinct(outOfScope) + distinct(forbidden))
        expect(generateFromProfile(input)).toEqual(generated)
      }),
      { numRuns: 300 }
    )
  })
})
