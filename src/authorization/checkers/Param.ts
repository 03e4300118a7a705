/**
 * Tool parameters (CaMeL-style capabilities): an `authority_bearing` param (who gets paid, where
 * mail goes) must carry a source label the tool's metadata allows, and any declared `limit`
 * (max, max_length, one_of) must hold. Also home of the tool-registry lookup the checkers share.
 */
import type { CheckContext, Checker, FindingDraft, ParamSource, EventKind } from "../Pipeline.js"

export type Fields = { readonly [key: string]: unknown }
export const isFields = (u: unknown): u is Fields => typeof u === "object" && u !== null && !Array.isArray(u)

/** The checkers of what an agent proposes: a tool result names a tool but proposes nothing. */
export const proposedOnly: ReadonlySet<EventKind> = new Set(["output.proposed"])

/** Shared by every checker: no findings, no allocation. */
export const noFindings: ReadonlyArray<FindingDraft> = []

/** The stored metadata of the enabled tool named by `action.operation`; undefined when unknown or disabled. */
export const registeredTool = (context: CheckContext): Fields | undefined => {
  const row = context.tools.get(context.action.operation)
  return row !== undefined && row.enabled && isFields(row.metadata) ? row.metadata : undefined
}

const INDEX = /^(?:0|[1-9][0-9]*)$/

/** The value at a dotted path (`a.b.0.c`, keys and array indexes); undefined when any step is missing. */
export const valueAt = (root: unknown, path: string): unknown => {
  if (path === "") return undefined
  let current = root
  let start = 0
  // indexOf instead of split: no array per lookup on the hot path.
  while (start <= path.length) {
    const dot = path.indexOf(".", start)
    const end = dot === -1 ? path.length : dot
    const segment = path.slice(start, end)
    if (Array.isArray(current)) current = INDEX.test(segment) ? current[Number(segment)] : undefined
    else if (isFields(current)) current = Object.hasOwn(current, segment) ? current[segment] : undefined
    else return undefined
    if (current === undefined) return undefined
    start = end + 1
  }
  return current
}

// ---- sources

const allows = (allowed: unknown, source: ParamSource): boolean => {
  if (!isFields(allowed) || allowed["origin"] !== source.origin) return false
  const id = allowed["source_id"]
  return id === undefined || id === null || id === "" || id === "*" || id === source.source_id
}

const allowedByAny = (allowed: ReadonlyArray<unknown>, source: ParamSource): boolean => {
  for (const entry of allowed) if (allows(entry, source)) return true
  return false
}

/** An inferred label of a value inside an object param (`recipient.iban` beneath `recipient`). */
const isBeneath = (labelled: string, path: string) =>
  labelled.length > path.length && labelled.startsWith(path) && labelled.charCodeAt(path.length) === 0x2e

/**
 * The first label of `path` that no allowed source covers (a value mixed from several sources is
 * only as trustworthy as its least trusted one); null when nothing labels the path; undefined when fine.
 */
const offendingSource = (
  sources: ReadonlyArray<ParamSource> | undefined,
  path: string,
  allowed: ReadonlyArray<unknown>
): ParamSource | null | undefined => {
  if (sources === undefined) return null
  let labelled = false
  for (const source of sources) {
    if (source.path !== path && !(source.inferred === true && isBeneath(source.path, path))) continue
    labelled = true
    if (!allowedByAny(allowed, source)) return source
  }
  return labelled ? undefined : null
}

const describeAllowed = (allowed: ReadonlyArray<unknown>): string =>
  allowed.map((a) => (isFields(a) ? String(a["origin"]) : "?")).join(", ")

// ---- limits

/** Numbers, and numeric strings (so `"900"` cannot slip past a max of 500). */
const numeric = (value: unknown): number | undefined => {
  if (typeof value === "number") return value
  if (typeof value !== "string" || value.trim() === "") return undefined
  const n = Number(value)
  return Number.isFinite(n) ? n : undefined
}

const codePoints = (text: string): number => {
  let count = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0xdc00 || unit > 0xdfff) count++ // a low surrogate continues the previous character
  }
  return count
}

interface Violation {
  readonly reason: string
  readonly observed: unknown
}

/**
 * A value the max cannot read as a number ("900 USD", "Infinity", [900], {amount: 900}) is a violation
 * too: a tool may still read it as a number past the max, so an unreadable value fails closed.
 */
const overMax = (max: number, value: unknown): Violation | undefined => {
  const n = numeric(value)
  if (n === undefined) return { reason: `is not a number a limit of ${max} can check`, observed: value }
  return n > max ? { reason: `exceeds limit (${n} > ${max})`, observed: n } : undefined
}

/** The first broken part of a limit: a number (max), or {max, max_length, one_of}. */
const limitViolation = (limit: unknown, value: unknown): Violation | undefined => {
  if (typeof limit === "number") return overMax(limit, value)
  if (!isFields(limit)) return undefined
  const max = limit["max"]
  if (typeof max === "number") {
    const violation = overMax(max, value)
    if (violation !== undefined) return violation
  }
  const maxLength = limit["max_length"]
  if (typeof maxLength === "number") {
    // A list or an object holds text the length cannot measure: it fails closed, as an unreadable number does.
    if (typeof value === "object" && value !== null) {
      return { reason: `is not text a max_length of ${maxLength} can check`, observed: value }
    }
    const text = typeof value === "string" ? value : String(value)
    // value.length counts UTF-16 units; only count exactly when it may be over.
    const length = text.length > maxLength ? codePoints(text) : 0
    if (length > maxLength) return { reason: `exceeds limit (${length} characters > ${maxLength})`, observed: length }
  }
  const oneOf = limit["one_of"]
  if (Array.isArray(oneOf) && !oneOf.includes(value)) {
    return { reason: "is not one of the allowed values", observed: value }
  }
  return undefined
}

// ---- checker

const deny = (tool: string, path: string, reason: string, remediation: string, evidence: unknown): FindingDraft => ({
  policy_id: null,
  requirement_id: `param:${tool}.${path}`,
  reason,
  remediation,
  effect: "deny",
  severity: "high",
  evidence
})

export const paramChecker: Checker = {
  name: "param",
  kinds: proposedOnly,
  check: (context) => {
    const params = registeredTool(context)?.["params"]
    if (!Array.isArray(params) || params.length === 0) return noFindings
    const tool = context.action.operation
    let findings: Array<FindingDraft> | undefined
    for (const param of params) {
      if (!isFields(param)) continue
      const path = param["path"]
      const role = param["role"]
      if (typeof path !== "string" || typeof role !== "string" || role === "") continue
      const value = valueAt(context.action.params, path)
      if (value === undefined) continue // absent: nothing to authorize
      const allowed = param["allowed_sources"]
      // Absent or empty allowed_sources: no restriction on where the value comes from.
      if (role === "authority_bearing" && Array.isArray(allowed) && allowed.length > 0) {
        const source = offendingSource(context.action.sources, path, allowed)
        if (source !== undefined) {
          const seen = source === null ? "has no source label" : `came from origin "${source.origin}"`
          ;(findings ??= []).push(
            deny(
              tool,
              path,
              `Param "${path}" of ${tool} ${seen}; allowed origins: ${describeAllowed(allowed)}.`,
              "Take this value from an allowed source (e.g. ask the user), or have a human confirm it.",
              source?.inferred === true
                ? { path, origin: source.origin, source_id: source.source_id, allowed, inferred: true }
                : { path, origin: source?.origin ?? null, source_id: source?.source_id ?? null, allowed }
            )
          )
        }
      }
      const violation = limitViolation(param["limit"], value)
      if (violation !== undefined) {
        ;(findings ??= []).push(
          deny(
            tool,
            path,
            `Param "${path}" of ${tool} ${violation.reason}.`,
            "Stay within the tool's declared limit.",
            {
              path,
              value: violation.observed,
              limit: param["limit"]
            }
          )
        )
      }
    }
    return findings ?? noFindings
  }
}
