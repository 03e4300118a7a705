/** Approval checker: tools that need a human's approval are deferred until a grant covers them. */
import { describe, expect, it } from "@effect/vitest"
import { approvalChecker } from "../../src/authorization/checkers/Approval.js"
import type { CheckContext } from "../../src/authorization/Pipeline.js"
import type { ToolMetadataRow } from "../../src/catalog/Repo.js"

const row = (tool: string, approval: unknown, enabled = true): ToolMetadataRow => ({
  tool,
  enabled,
  version: 1,
  metadata: { tool, reversible: false, side_effect: "write", ...(approval === undefined ? {} : { approval }) }
})

const tools = new Map(
  [
    row("wire_money", true),
    row("refund", {
      required: true,
      approvers: ["finance-lead", 42],
      reason: "Refunds over policy need finance sign-off."
    }),
    row("delete_repo", { approvers: ["ops"] }),
    row("escalate_ticket", "manager"),
    row("archive", { required: false }),
    row("notify", null),
    row("tag", false),
    row("lookup", undefined),
    row("purge", true, false)
  ].map((r) => [r.tool, r])
)

const context = (operation: string, granted = false): CheckContext => ({
  agentId: "support-bot",
  kind: "output.proposed",
  action: { operation },
  agent: undefined,
  policies: [],
  labelPolicies: new Map(),
  tools,
  granted
})

const defaultReason = (tool: string) => `${tool} needs a human's approval before it runs.`

// `approval` is the expected approval request, or null for no finding.
const cases: ReadonlyArray<{
  readonly name: string
  readonly context: CheckContext
  readonly approval: { readonly reason: string; readonly approvers: ReadonlyArray<string> } | null
}> = [
  {
    name: "approval: true without a grant",
    context: context("wire_money"),
    approval: { reason: defaultReason("wire_money"), approvers: [] }
  },
  { name: "approval: true with a grant", context: context("wire_money", true), approval: null },
  {
    name: "an approval object with reason and approvers (non-strings dropped)",
    context: context("refund"),
    approval: { reason: "Refunds over policy need finance sign-off.", approvers: ["finance-lead"] }
  },
  { name: "an approval object with a grant", context: context("refund", true), approval: null },
  {
    name: "an approval object without `required` asks for approval",
    context: context("delete_repo"),
    approval: { reason: defaultReason("delete_repo"), approvers: ["ops"] }
  },
  {
    name: "a truthy string asks for approval",
    context: context("escalate_ticket"),
    approval: { reason: defaultReason("escalate_ticket"), approvers: [] }
  },
  { name: "required: false", context: context("archive"), approval: null },
  { name: "approval: null", context: context("notify"), approval: null },
  { name: "approval: false", context: context("tag"), approval: null },
  { name: "no approval field", context: context("lookup"), approval: null },
  { name: "a disabled tool", context: context("purge"), approval: null },
  { name: "a tool not in the registry", context: context("wire_money_v2"), approval: null },
  { name: "a reply", context: context("reply"), approval: null }
]

describe("approval checker", () => {
  it.each(cases)("$name", ({ context, approval }) => {
    const findings = approvalChecker.check(context)
    if (approval === null) return expect(findings).toEqual([])
    const tool = context.action.operation
    expect(findings).toEqual([
      {
        policy_id: null,
        requirement_id: `approval:${tool}`,
        reason: approval.reason,
        remediation: "Ask an approver to grant this action, then submit it again.",
        effect: "defer",
        severity: "high",
        evidence: { tool, approvers: approval.approvers },
        approval: { required: true, tool, reason: approval.reason, approvers: approval.approvers }
      }
    ])
  })
})
