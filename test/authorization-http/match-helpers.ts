/** Shared by the policy-language HTTP suites: a deny policy of a given match, and a workspace with the agent. */
import { Effect } from "effect"
import { apiOf, createAgent, type Decision, type EventTenant, yamlBytes } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl } from "../support/TestServer.js"

export const AGENT = "support-bot"

/** A deny policy with this match, as a JSON document (JSON is YAML). */
export const policyText = (id: string, match: unknown, extra: object = {}) =>
  JSON.stringify({
    id,
    description: `policy ${id}`,
    family: "content",
    severity: "high",
    action: "deny",
    match,
    ...extra
  })

export const createMatchPolicy = (base: string, owner: EventTenant, id: string, match: unknown, extra: object = {}) =>
  Effect.flatMap(apiOf(base, owner), (api) =>
    api.policies.createPolicy({ payload: yamlBytes(policyText(id, match, extra)) })
  )

/** A fresh tenant with the support agent's profile. */
export const setUp = Effect.gen(function* () {
  const base = yield* baseUrl
  const owner = yield* tenant(base)
  yield* createAgent(base, owner, AGENT)
  return { base, owner }
})

/** The evidence of the decision's finding for `policyId`. */
export const evidenceOf = (decision: Decision, policyId: string) =>
  decision.findings.find((finding) => finding.policy_id === policyId)?.evidence
