/**
 * Helpers of the authorization HTTP suites over the contract's typed client:
 * enabling policies, tool metadata, and the reasons of a decision. Agents,
 * policies and proposed events: test/support/Events.ts.
 */
import { Effect } from "effect"
import { PolicyId, type UpsertToolMetadata } from "../../src/catalog/Domain.js"
import { apiOf, type Decision, type Owner } from "../support/Events.js"

/** `PATCH /v1/policies/{id}/enabled` (200). */
export const setPolicyEnabled = (base: string, owner: Owner, id: string, enabled: boolean) =>
  Effect.flatMap(apiOf(base, owner), (api) =>
    api.policies.setPolicyEnabled({ path: { id: PolicyId.make(id) }, payload: { enabled } })
  )

/** `POST /v1/tool-metadata` (200). */
export const upsertTool = (base: string, owner: Owner, metadata: typeof UpsertToolMetadata.Type) =>
  Effect.flatMap(apiOf(base, owner), (api) => api.toolMetadata.upsertToolMetadata({ payload: metadata }))

/** `issue_refund` needs approval, and the workspace's approval checker enforces it: refunds are deferred. */
export const refundsNeedApproval = (base: string, owner: Owner) =>
  Effect.gen(function* () {
    yield* upsertTool(base, owner, { tool: "issue_refund", reversible: false, side_effect: "payment", approval: true })
    const api = yield* apiOf(base, owner)
    yield* api.settings.updateSettings({ payload: { approval_checker_mode: "enforce" } })
  })

/** The requirement ids (or policy ids) of a decision's findings. */
export const reasonsOf = (decision: Decision) =>
  decision.findings.map((finding) => finding.policy_id ?? finding.requirement_id)
