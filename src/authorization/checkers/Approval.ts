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

export const approvalChecker: Checker = {
  name: "approval",
  kinds: proposedOnly,
  check: (context) => {
    if (context.granted) return noFindings // a grant already covers this intent
    const approval = registeredTool(context)?.["approval"]
    if (!requiresApproval(approval)) return noFindings
    const tool = context.action.operation
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
