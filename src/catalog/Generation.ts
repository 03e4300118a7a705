/**
 * Derives guardrail policies from an agent profile. Each generated policy
 * has a stable id built from the agent and the phrase it guards, so
 * regenerating replaces rather than duplicates; it is owned by the agent and
 * starts disabled.
 */
import { createHash } from "node:crypto"
import { stringify } from "yaml"
import { Limits } from "../platform/Schemas.js"

export interface ProfileForGeneration {
  readonly agent_id: string
  readonly authority: { readonly cannot_promise: ReadonlyArray<string> }
  readonly scope: { readonly out_of_scope: ReadonlyArray<string> }
  readonly tone: { readonly forbidden: ReadonlyArray<string> }
  readonly escalation_triggers: ReadonlyArray<string>
  readonly workflow_requirements: ReadonlyArray<{
    readonly name: string
    readonly required_before: ReadonlyArray<string>
    readonly sensitive_steps: ReadonlyArray<string>
  }>
}

export interface GeneratedPolicy {
  readonly document: Record<string, unknown>
  readonly sourceYaml: string
}

const slug = (text: string) =>
  text
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "") || "x"

const shortHash = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 8)

/** A phrase's id part: its slug when the phrase can be read back from it, else slug + hash of the lowercased phrase. */
const phrasePart = (text: string) => {
  const lower = text.toLowerCase()
  const base = slug(text)
  return !lower.includes("-") && base.replaceAll("-", " ") === lower ? base : `${base}-${shortHash(lower)}`
}

/** The agent's id part: its own id lowercased (agent ids are [A-Za-z0-9_.-]), with a hash when it had capitals. */
export const agentPart = (agentId: string) => {
  const lower = agentId.toLowerCase()
  return lower === agentId ? agentId : `${lower}-${shortHash(agentId)}`
}

/** A policy id of at most 128 characters: a longer one keeps its first 117 and a hash of all of it, so ids stay distinct. */
export const boundedPolicyId = (id: string) =>
  id.length <= 128 ? id : `${id.slice(0, 117)}.${createHash("sha256").update(id).digest("hex").slice(0, 10)}`

/** `[a-z0-9][a-z0-9_.-]{0,127}`, shortened with a hash suffix when too long. */
const stableId = (agentId: string, kind: string, ...phrases: ReadonlyArray<string>) =>
  boundedPolicyId([agentPart(agentId), kind, ...phrases.map(phrasePart)].join("."))

/**
 * A description within what an authored policy may have (`Limits.text`): a phrase of the longest allowed
 * length plus the sentence around it would otherwise make a document that fails validation, so the policy
 * could never be enabled. Cut on a code point, never inside a surrogate pair.
 */
const withinTextLimit = (text: string) => {
  if (text.length <= Limits.text) return text
  const cut = Limits.text - 1
  const end = /[\uD800-\uDBFF]/.test(text[cut - 1]!) ? cut - 1 : cut
  return `${text.slice(0, end)}…`
}

/** A generated document with its YAML (the costly part: made only once the documents are known to fit). */
export const withSource = (document: Record<string, unknown>): GeneratedPolicy => ({
  document,
  sourceYaml: stringify(document, { lineWidth: 0 })
})

const contentPolicy = (
  agentId: string,
  kind: string,
  phrase: string,
  fields: { description: string; severity: string; action: string; rewrite?: string; escalate?: boolean }
) => ({
  id: stableId(agentId, kind, phrase),
  description: withinTextLimit(fields.description),
  family: "content",
  severity: fields.severity,
  action: fields.action,
  enabled: false,
  owner_agent_id: agentId,
  match: { type: "literal", value: phrase, target: "content", case_sensitive: false },
  ...(fields.rewrite === undefined ? {} : { rewrite: fields.rewrite }),
  ...(fields.escalate === true ? { escalate: true } : {})
})

const stepPolicy = (
  agentId: string,
  family: "approval" | "flow",
  requirement: string,
  step: string,
  description: string
) => ({
  id: stableId(agentId, family, requirement, step),
  description: withinTextLimit(description),
  family,
  severity: "high",
  action: "defer",
  enabled: false,
  owner_agent_id: agentId,
  match: { type: "literal", value: step, target: "operation", case_sensitive: false },
  ...(family === "flow" ? { requires: requirement } : {})
})

const nonBlank = (phrases: ReadonlyArray<string>) => phrases.filter((phrase) => phrase.trim() !== "")

/** The documents a profile generates, one per id (without their YAML, so counting them is cheap). */
export const generatedDocuments = (profile: ProfileForGeneration): ReadonlyArray<Record<string, unknown>> => {
  const agent = profile.agent_id
  const generated = [
    ...nonBlank(profile.authority.cannot_promise).map((phrase) =>
      contentPolicy(agent, "cannot-promise", phrase, {
        description: `${agent} must never promise: ${phrase}`,
        severity: "high",
        action: "deny"
      })
    ),
    ...nonBlank(profile.scope.out_of_scope).map((topic) =>
      contentPolicy(agent, "out-of-scope", topic, {
        description: `${topic} is out of ${agent}'s scope; hold for review`,
        severity: "medium",
        action: "defer"
      })
    ),
    ...nonBlank(profile.tone.forbidden).map((word) =>
      contentPolicy(agent, "tone", word, {
        description: `${agent} does not say "${word}"`,
        severity: "low",
        action: "rewrite",
        rewrite: "[removed]"
      })
    ),
    ...nonBlank(profile.escalation_triggers).map((trigger) =>
      contentPolicy(agent, "escalate", trigger, {
        description: `Escalate to a human when "${trigger}" comes up`,
        severity: "high",
        action: "defer",
        escalate: true
      })
    ),
    ...profile.workflow_requirements.flatMap((requirement) => [
      ...nonBlank(requirement.sensitive_steps).map((step) =>
        stepPolicy(agent, "approval", requirement.name, step, `${step} needs human approval (${requirement.name})`)
      ),
      ...nonBlank(requirement.required_before).map((step) =>
        stepPolicy(agent, "flow", requirement.name, step, `${step} may run only after ${requirement.name}`)
      )
    ])
  ]
  // One policy per id: a phrase listed twice yields one policy.
  return [...new Map(generated.map((document) => [String(document["id"]), document])).values()]
}

export const generateFromProfile = (profile: ProfileForGeneration): ReadonlyArray<GeneratedPolicy> =>
  generatedDocuments(profile).map(withSource)
