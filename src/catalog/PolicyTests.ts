/**
 * Running a policy's `tests`: each example event is decided by the function
 * POST /v1/events decides with (Decisions.ts `evaluate`), over a policy set
 * held in memory: the policy alone when a document is validated, the
 * workspace's current set for `POST /v1/policies/test`. Pure.
 */
import { evaluate } from "../authorization/Decisions.js"
import { ALL_ENFORCED, type DecisionEffect } from "../authorization/Pipeline.js"
import type { PolicyDocument } from "./Domain.js"
import { compilePolicy, type CompiledPolicy, type PolicyErrors } from "./PolicyLanguage.js"
import type { PolicyTestCase } from "./PolicyTestSchemas.js"
import type { Snapshot } from "./Snapshot.js"

/** The agent a test event comes from when the policy names no owner. */
const TEST_AGENT = "policy-test"

export interface TestOutcome {
  readonly passed: boolean
  readonly actual: DecisionEffect
  readonly transformedValue: string | null
}

/** One test over `snapshot`, as the event of the policy's owner (or of a test agent). */
export const runPolicyTest = (snapshot: Snapshot, policy: CompiledPolicy, test: PolicyTestCase): TestOutcome => {
  const decision = evaluate(
    snapshot,
    {
      kind: test.event.kind ?? "output.proposed",
      principal: {
        agent_id: policy.ownerAgentId ?? TEST_AGENT,
        environment_id: TEST_AGENT,
        workspace_id: snapshot.workspaceId
      },
      action: test.event.action
    },
    ALL_ENFORCED,
    false,
    "permit"
  )
  const valueMatches = test.transformed_value === undefined || decision.transformed_value === test.transformed_value
  return {
    passed: decision.effect === test.expect && valueMatches,
    actual: decision.effect,
    transformedValue: decision.transformed_value
  }
}

/** `snapshot` with `policy` in its set (enabled), replacing any policy with its id. */
export const withPolicy = (snapshot: Snapshot, policy: CompiledPolicy): Snapshot => ({
  ...snapshot,
  policies: [...snapshot.policies.filter((other) => other.id !== policy.id), policy]
})

const emptySnapshot: Snapshot = {
  workspaceId: "",
  loadedAt: new Date(0),
  policies: [],
  agents: new Map(),
  agentVersions: new Map(),
  labelPolicies: new Map(),
  tools: new Map()
}

/** Validation: every failing test of a valid document, at `tests.N.expect` (or `.transformed_value`). */
export const policyTestErrors = (document: PolicyDocument): PolicyErrors => {
  const tests = document.tests ?? []
  if (tests.length === 0) return []
  const policy = compilePolicy(document)
  if (policy.errors.length > 0) return [] // reported by validation already
  const alone = withPolicy(emptySnapshot, policy)
  return tests.flatMap((test, index) => {
    const outcome = runPolicyTest(alone, policy, test)
    if (outcome.passed) return []
    return outcome.actual !== test.expect
      ? [
          {
            path: `tests.${index}.expect`,
            message: `test "${test.name}" expected ${test.expect}, got ${outcome.actual}`
          }
        ]
      : [
          {
            path: `tests.${index}.transformed_value`,
            message: `test "${test.name}" expected transformed_value ${JSON.stringify(test.transformed_value)}, got ${JSON.stringify(outcome.transformedValue)}`
          }
        ]
  })
}
