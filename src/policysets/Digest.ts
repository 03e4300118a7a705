/**
 * The policy set of a decision and its digest: a sha-256 over exactly what
 * decided (the enabled policy versions that applied to the agent, its
 * profile's version, tool metadata and label policy versions, the checker
 * modes, the default action and the detectors' version).
 *
 * Computed once per catalog snapshot and (agent, modes, default action),
 * not per request: a snapshot is immutable and replaced on every change, so
 * its sets are memoised beside it and a decision only builds a short key.
 */
import { createHash } from "node:crypto"
import type { Snapshot } from "../catalog/Snapshot.js"
import type { CheckerMode, CheckerName } from "../authorization/Pipeline.js"
import { canonicalJson } from "../authorization/Receipts.js"
import { DETECTORS_VERSION } from "../detection/Version.js"
import type { PolicySetContent } from "./Domain.js"

export interface PolicySet {
  readonly digest: string
  readonly content: PolicySetContent
  /** Set once a committed decision stored the content (policy_sets): later decisions carry only the digest. */
  stored: boolean
}

type Modes = Readonly<Record<CheckerName, CheckerMode>>
type DefaultAction = PolicySetContent["default_action"]

const CHECKERS: ReadonlyArray<CheckerName> = ["content", "profile", "param", "flow", "approval", "memory"]

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

/** The sha-256 of a dry run's candidate document text, which names it in the set. */
export const candidateDigest = sha256

const byKey =
  <K extends string>(key: K) =>
  <A extends Readonly<Record<K, string>>>(a: A, b: A) =>
    a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0

const contentOf = (
  snapshot: Snapshot,
  agentId: string,
  modes: Modes,
  defaultAction: DefaultAction,
  candidates: ReadonlyMap<string, string>
): PolicySetContent => {
  const agentVersion = snapshot.agents.has(agentId) ? snapshot.agentVersions.get(agentId) : undefined
  return {
    detectors_version: DETECTORS_VERSION,
    default_action: defaultAction,
    checker_modes: Object.fromEntries(CHECKERS.map((name) => [name, modes[name]])) as Record<CheckerName, CheckerMode>,
    policies: snapshot.policies
      .filter((policy) => policy.ownerAgentId === null || policy.ownerAgentId === agentId)
      .map((policy) => {
        const candidate = policy.version === undefined ? candidates.get(policy.id) : undefined
        return candidate === undefined
          ? { id: policy.id, version: policy.version ?? null }
          : { id: policy.id, version: null, candidate_sha256: candidate }
      })
      .sort(byKey("id")),
    agent: agentVersion === undefined ? null : { agent_id: agentId, version: agentVersion },
    tool_metadata: [...snapshot.tools.values()]
      .map((row) => ({ tool: row.tool, version: row.version }))
      .sort(byKey("tool")),
    label_policies: [...snapshot.labelPolicies.values()]
      .map((row) => ({ origin: row.origin, version: row.version }))
      .sort(byKey("origin"))
  }
}

const memo = new WeakMap<Snapshot, Map<string, PolicySet>>()

/**
 * The set that decides for `agentId` under `modes` and `defaultAction` over `snapshot`. `candidates`
 * (a dry run's documents by policy id, as their sha-256) name the policies that have no stored version.
 */
export const policySetOf = (
  snapshot: Snapshot,
  agentId: string,
  modes: Modes,
  defaultAction: DefaultAction,
  candidates: ReadonlyMap<string, string> = new Map()
): PolicySet => {
  let sets = memo.get(snapshot)
  if (sets === undefined) {
    sets = new Map()
    memo.set(snapshot, sets)
  }
  const key = `${agentId}\u0000${defaultAction}\u0000${CHECKERS.map((name) => modes[name]).join(",")}`
  const known = sets.get(key)
  if (known !== undefined) return known
  const content = contentOf(snapshot, agentId, modes, defaultAction, candidates)
  const set: PolicySet = { digest: sha256(canonicalJson(content)), content, stored: false }
  sets.set(key, set)
  return set
}
