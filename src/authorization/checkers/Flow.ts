/**
 * Information flow (FIDES-style labels): each source origin carries an integrity and a
 * confidentiality label from its label policy. Untrusted data must not drive a consequential tool
 * (integrity), and confidential data must not leave through an outbound sink (confidentiality).
 * Also home of the label helpers the memory checker shares.
 */
import type { LabelPolicyRow } from "../../catalog/Repo.js"
import type { CheckContext, Checker, FindingDraft, ParamSource } from "../Pipeline.js"
import { noFindings, registeredTool, proposedOnly } from "./Param.js"

type Labels = ReadonlyMap<string, LabelPolicyRow>

/** Origins that carry third-party text, untrusted unless a label policy says otherwise. */
const DEFAULT_UNTRUSTED: ReadonlySet<string> = new Set(["web", "email", "tool_output", "retrieval"])
const LOW = new Set(["untrusted", "low"])
const SECRET = new Set(["secret", "restricted"])
const CONFIDENTIAL = new Set(["confidential", "high", "secret", "restricted"])
const OUTBOUND_EFFECTS = new Set(["outbound", "external", "send", "network", "email", "message"])
const OUTBOUND_NAME = /send|email|post|publish|upload|webhook|http/i

const word = (u: unknown): string | undefined => (typeof u === "string" ? u.trim().toLowerCase() : undefined)
const isLow = (u: unknown): boolean => LOW.has(word(u) ?? "") || (typeof u === "number" && u < 0.5)
const isSet = (u: unknown): boolean => u !== undefined && u !== null

const enabledLabel = (labels: Labels, origin: string): LabelPolicyRow | undefined => {
  const label = labels.get(origin)
  return label?.enabled === true ? label : undefined
}

/**
 * Low integrity: the origin's label says integrity or trust is `untrusted`/`low` (or trust < 0.5).
 * A label that states neither falls back to the default list, so labelling `web` only for
 * confidentiality does not make it trusted.
 */
export const isUntrusted = (labels: Labels, origin: string): boolean => {
  const label = enabledLabel(labels, origin)
  if (label === undefined || (!isSet(label.integrity) && !isSet(label.trust))) return DEFAULT_UNTRUSTED.has(origin)
  return isLow(label.integrity) || isLow(label.trust)
}

/** How far an origin is trusted, lowest first: untrusted, then a numeric `trust`, then any origin but `user`. */
type Rank = readonly [number, number, number]
const trustRank = (labels: Labels, origin: string): Rank => {
  const trust = enabledLabel(labels, origin)?.trust
  return [isUntrusted(labels, origin) ? 0 : 1, typeof trust === "number" ? trust : 1, origin === "user" ? 1 : 0]
}

/**
 * The least trusted of several origins (a value seen under each counts as this one): by the label
 * rules above, then by a numeric `trust`; among equally trusted origins, any origin is below `user`
 * (then by name, so the choice is stable).
 */
export const leastTrusted = (labels: Labels, origins: Iterable<string>): string | undefined => {
  let least: string | undefined
  let leastRank: Rank = [2, 2, 2]
  for (const origin of origins) {
    const rank = trustRank(labels, origin)
    const order = rank[0] - leastRank[0] || rank[1] - leastRank[1] || rank[2] - leastRank[2]
    if (least === undefined || order < 0 || (order === 0 && origin < least)) {
      least = origin
      leastRank = rank
    }
  }
  return least
}

/** 0: public, 1: confidential (`confidential`, `high`), 2: secret (`secret`, `restricted`). */
export const confidentiality = (labels: Labels, origin: string): 0 | 1 | 2 => {
  const level = word(enabledLabel(labels, origin)?.confidentiality) ?? ""
  return SECRET.has(level) ? 2 : CONFIDENTIAL.has(level) ? 1 : 0
}

/** Whether an earlier source already had this origin: one finding per origin, without a Set. */
export const seenBefore = (sources: ReadonlyArray<ParamSource>, index: number, origin: string): boolean => {
  for (let i = 0; i < index; i++) if (sources[i]!.origin === origin) return true
  return false
}

/** The labelled paths of one origin (built only when reporting). */
export const pathsOf = (sources: ReadonlyArray<ParamSource>, origin: string): ReadonlyArray<string> =>
  sources.filter((source) => source.origin === origin).map((source) => source.path)

/** `inferred: true` in a finding's evidence when a label of the origin was inferred, not given (Provenance.ts). */
export const inferredOf = (sources: ReadonlyArray<ParamSource>, origin: string) =>
  sources.some((source) => source.origin === origin && source.inferred === true) ? { inferred: true } : undefined

interface Sink {
  readonly consequential: boolean
  readonly irreversible: boolean
  readonly outbound: boolean
}

/** A reply goes to the end user: outbound, but not a tool with side effects. */
const REPLY: Sink = { consequential: false, irreversible: false, outbound: true }

/** How the operation can hurt: registered tools by their metadata; unknown tools by name only. */
const sinkOf = (context: CheckContext): Sink => {
  const tool = context.action.operation
  const metadata = registeredTool(context)
  const sideEffect = word(metadata?.["side_effect"])
  const outbound = OUTBOUND_EFFECTS.has(sideEffect ?? "") || OUTBOUND_NAME.test(tool)
  const irreversible = metadata?.["reversible"] === false
  // Missing side_effect on a registered tool counts as a side effect (fail closed).
  const consequential = metadata === undefined ? outbound : irreversible || sideEffect !== "none"
  return { consequential, irreversible, outbound }
}

const integrityFinding = (origin: string, tool: string, irreversible: boolean, evidence: unknown): FindingDraft => ({
  policy_id: null,
  requirement_id: `flow:integrity:${origin}->${tool}`,
  reason: `Data from untrusted origin "${origin}" would drive ${irreversible ? "irreversible " : ""}tool ${tool}.`,
  remediation: "Confirm the values with the user, or take them from a trusted source.",
  effect: irreversible ? "deny" : "defer",
  severity: "high",
  evidence
})

const confidentialityFinding = (origin: string, tool: string, reply: boolean, evidence: unknown): FindingDraft => ({
  policy_id: null,
  requirement_id: `flow:confidentiality:${origin}->${tool}`,
  reason: reply
    ? `Secret data from origin "${origin}" would be shown in a reply.`
    : `Confidential data from origin "${origin}" would leave through outbound tool ${tool}.`,
  remediation: reply
    ? "Have a human check the reply before it is sent."
    : "Remove the confidential values from the call.",
  effect: reply ? "defer" : "deny",
  severity: reply ? "high" : "critical",
  evidence
})

export const flowChecker: Checker = {
  name: "flow",
  kinds: proposedOnly,
  check: (context) => {
    const sources = context.action.sources
    if (sources === undefined || sources.length === 0) return noFindings
    const { labelPolicies: labels } = context
    const tool = context.action.operation
    // Only secret data is held back from a reply (for a human to check); the user may see the rest.
    const reply = tool === "reply"
    const sink = reply ? REPLY : sinkOf(context)
    if (!sink.consequential && !sink.outbound) return noFindings
    let findings: Array<FindingDraft> | undefined
    for (let i = 0; i < sources.length; i++) {
      const origin = sources[i]!.origin
      if (seenBefore(sources, i, origin)) continue
      const labelled = enabledLabel(labels, origin) !== undefined
      if (sink.consequential && isUntrusted(labels, origin)) {
        const evidence = {
          origin,
          tool,
          paths: pathsOf(sources, origin),
          labelled,
          reversible: !sink.irreversible,
          ...inferredOf(sources, origin)
        }
        ;(findings ??= []).push(integrityFinding(origin, tool, sink.irreversible, evidence))
      }
      const level = sink.outbound ? confidentiality(labels, origin) : 0
      if (level === 2 || (level === 1 && !reply)) {
        const evidence = {
          origin,
          tool,
          paths: pathsOf(sources, origin),
          confidentiality: level === 2 ? "secret" : "confidential",
          ...inferredOf(sources, origin)
        }
        ;(findings ??= []).push(confidentialityFinding(origin, tool, reply, evidence))
      }
    }
    return findings ?? noFindings
  }
}
