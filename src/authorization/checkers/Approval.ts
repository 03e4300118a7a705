/**
 * Human approval: a tool whose metadata asks for approval (`approval: true`, or an object such as
 * {required: true, approvers, reason}) is deferred until a grant covers the intent. The finding
 * carries the approval request, which the pipeline exposes as the decision's `approval`.
 */
import type { Checker } from "../Pipeline.js"
import { isFields, noFindings, registeredTool, proposedOnly } from "./Param.js"

/** Truthy asks for approval; an object does unless it says `required: false`. */
const requiresApproval = (approval: unknown): boolean =>
  isFields(approval) ? approval["required"] !== false : Boolean(approval)

const strings = (u: unknown): ReadonlyArray<string> =>
  Array.isArray(u) ? u.filter((item): item is string => typeof item === "string") : []

/** A denied intent answers deny from then on, with the approver's reason when one was given. */
const deniedFinding = (tool: string, reason: string | null) => ({
  policy_id: null,
  requirement_id: `approval:${tool}`,
  reason: reason === null ? `An approver denied ${tool} for this intent.` : `An approver denied ${tool}: ${reason}`,
  remediation: "Do not run this action; propose a different one.",
  effect: "deny" as const,
  severity: "high" as const,
  evidence: { tool, denied: true }
})

export const approvalChecker: Checker = {
  name: "approval",
  kinds: proposedOnly,
  check: (context) => {
    const approval = registeredTool(context)?.["approval"]
    if (!requiresApproval(approval)) return noFindings
    const tool = context.action.operation
    if (context.denial !== undefined) return [deniedFinding(tool, context.denial.reason)]
    if (context.granted) return noFindings // a grant already covers this intent
    const details = isFields(approval) ? approval : undefined
    const stated = details?.["reason"]
    const reason =
      typeof stated === "string" && stated.trim() !== "" ? stated : `${tool} needs a human's approval before it runs.`
    const approvers = strings(details?.["approvers"])
    return [
      {
        policy_id: null,
        requirement_id: `approval:${tool}`,
        reason,
        remediation: "Ask an approver to grant this action, then submit it again.",
        effect: "defer",
        severity: "high",
        evidence: { tool, approvers },
        approval: { required: true, tool, reason, approvers }
      }
    ]
  }
}
