// Evidence spans in decided text: findings carry `evidence.spans` as UTF-16 offsets ({start, end,
// target?}) into the value named by the span's or the evidence's `target` ("content", or a path
// into the action's params such as "params.body"). JavaScript strings are UTF-16, so the offsets
// slice the text directly.
import { el } from "./shell.js"

/** Observe-mode findings wrap their evidence as {observed_only, detail}. */
export const evidenceOf = (finding) => {
  const evidence = finding.evidence
  if (evidence && typeof evidence === "object" && evidence.observed_only === true) return evidence.detail ?? {}
  return evidence && typeof evidence === "object" ? evidence : {}
}

/** Every span of every finding, as {target, start, end, finding}. */
export function spansOf(findings) {
  const spans = []
  for (const finding of findings) {
    const evidence = evidenceOf(finding)
    for (const span of Array.isArray(evidence.spans) ? evidence.spans : []) {
      if (!Number.isInteger(span.start) || !Number.isInteger(span.end) || span.end <= span.start) continue
      spans.push({ target: span.target ?? evidence.target ?? "content", start: span.start, end: span.end, finding: finding.id })
    }
  }
  return spans
}

/** The text a target names in the action, or null when it is not a string. */
export function textOf(action, target) {
  if (target === "content") return typeof action.content === "string" ? action.content : null
  let value = action
  for (const key of target.split(".")) {
    if (value === null || typeof value !== "object") return null
    value = value[key]
  }
  return typeof value === "string" ? value : null
}

/** The text with its spans marked (overlaps merged); a span past the end is clipped. */
export function highlighted(text, spans) {
  const sorted = spans
    .map((s) => ({ ...s, start: Math.max(0, s.start), end: Math.min(text.length, s.end) }))
    .filter((s) => s.end > s.start)
    .sort((a, b) => a.start - b.start)
  const merged = []
  for (const span of sorted) {
    const last = merged.at(-1)
    if (last && span.start <= last.end) {
      last.end = Math.max(last.end, span.end)
      last.findings.add(span.finding)
    } else merged.push({ start: span.start, end: span.end, findings: new Set([span.finding]) })
  }
  const pre = el("pre", { class: "content" })
  let at = 0
  for (const span of merged) {
    pre.append(text.slice(at, span.start))
    const findings = [...span.findings].join(", ")
    pre.append(el("mark", { class: "evidence", title: `Evidence of ${findings}`, "data-findings": findings, text: text.slice(span.start, span.end) }))
    at = span.end
  }
  pre.append(text.slice(at))
  return pre
}
