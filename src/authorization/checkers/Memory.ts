/**
 * Memory writes: what an agent remembers steers its later turns, so untrusted data (same labels as
 * the flow checker) must not be written to memory without a human looking at it first.
 */
import type { CheckContext, Checker, FindingDraft } from "../Pipeline.js"
import { inferredOf, isUntrusted, pathsOf, seenBefore } from "./Flow.js"
import { noFindings, registeredTool, proposedOnly } from "./Param.js"

/** `memory.write`, or a registered tool whose metadata says it writes memory. */
const isMemoryWrite = (context: CheckContext): boolean => {
  if (context.action.operation === "memory.write") return true
  const metadata = registeredTool(context)
  return metadata !== undefined && (metadata["side_effect"] === "memory" || metadata["memory"] === true)
}

export const memoryChecker: Checker = {
  name: "memory",
  kinds: proposedOnly,
  check: (context) => {
    const sources = context.action.sources
    if (sources === undefined || sources.length === 0 || !isMemoryWrite(context)) return noFindings
    let findings: Array<FindingDraft> | undefined
    for (let i = 0; i < sources.length; i++) {
      const origin = sources[i]!.origin
      if (seenBefore(sources, i, origin) || !isUntrusted(context.labelPolicies, origin)) continue
      ;(findings ??= []).push({
        policy_id: null,
        requirement_id: `memory:${origin}`,
        reason: `Memory write carries data from untrusted origin "${origin}".`,
        remediation: "Confirm with the user before remembering it, or leave the untrusted part out.",
        effect: "defer",
        severity: "medium",
        evidence: {
          origin,
          tool: context.action.operation,
          paths: pathsOf(sources, origin),
          ...inferredOf(sources, origin)
        }
      })
    }
    return findings ?? noFindings
  }
}
