/**
 * Running a detector's patterns over views and folding the findings: a
 * match in any view is reported once, at its raw range.
 */
import type { DetectorName, Finding, Span, TextView } from "./Types.js"

/** Calls `onMatch` for every match of a global regex in a view (the regex is reset first). */
export const eachMatch = (pattern: RegExp, view: TextView, onMatch: (match: RegExpExecArray) => void) => {
  pattern.lastIndex = 0
  for (let match = pattern.exec(view.text); match !== null; match = pattern.exec(view.text)) {
    if (match[0].length === 0) pattern.lastIndex++
    onMatch(match)
  }
}

const overlaps = (a: Span, b: Span) => a.start < b.end && b.start < a.end
const sameRange = (a: Span, b: Span) => a.start === b.start && a.end === b.end

/** Sorted union of spans: overlapping spans become one. */
export const unionSpans = (spans: ReadonlyArray<Span>): Array<Span> => {
  const sorted = [...spans].sort((a, b) => a.start - b.start || b.end - a.end)
  const result: Array<Span> = []
  for (const span of sorted) {
    const last = result[result.length - 1]
    if (last !== undefined && span.start < last.end) {
      if (span.end > last.end) result[result.length - 1] = { start: last.start, end: span.end }
    } else if (last === undefined || !sameRange(last, span)) result.push(span)
  }
  return result
}

/**
 * Collects findings of one detector: findings of the same category whose
 * spans overlap (the same thing seen in several views) are merged, keeping
 * the highest score and the first message.
 */
export class FindingSet {
  private readonly findings: Array<{
    category: string
    score: number | undefined
    spans: Array<Span>
    message: string
  }> = []
  /** Exact repeats (the same match seen in the raw and the folded view) are dropped without a search. */
  private readonly seen = new Set<string>()
  constructor(private readonly detector: DetectorName) {}

  add(category: string, span: Span, message: string, score?: number) {
    const key = `${category}:${span.start}:${span.end}`
    if (score === undefined && this.seen.has(key)) return
    this.seen.add(key)
    for (const finding of this.findings) {
      if (
        finding.category === category &&
        finding.spans.some((known) => overlaps(known, span) || sameRange(known, span))
      ) {
        finding.spans = unionSpans([...finding.spans, span])
        if (score !== undefined && (finding.score === undefined || score > finding.score)) finding.score = score
        return
      }
    }
    this.findings.push({ category, score, spans: [span], message })
  }

  /** One finding with all these spans (a leak reproduced in several places is one finding). */
  addAll(category: string, spans: ReadonlyArray<Span>, message: string, score?: number) {
    if (spans.length > 0) this.findings.push({ category, score, spans: unionSpans(spans), message })
  }

  get size() {
    return this.findings.length
  }

  result(): Array<Finding> {
    return this.findings.map(({ category, message, score, spans }) =>
      score === undefined
        ? { detector: this.detector, category, spans, message }
        : { detector: this.detector, category, score, spans, message }
    )
  }
}
