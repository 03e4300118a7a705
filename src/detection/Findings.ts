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

/** A range of the text some finding of a category covers, and the first finding that covers it. */
interface Covered {
  start: number
  end: number
  readonly finding: number
}

/** Index of the first of `ranges` (disjoint, sorted) that ends after `at`. */
const firstEndingAfter = (ranges: ReadonlyArray<Covered>, at: number) => {
  let low = 0
  let high = ranges.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if (ranges[mid]!.end <= at) low = mid + 1
    else high = mid
  }
  return low
}

/**
 * Collects findings of one detector: findings of the same category whose
 * spans overlap (the same thing seen in several views) are merged, keeping
 * the highest score and the first message. What each category covers is
 * kept sorted, so a span finds the finding it overlaps by binary search: a
 * text with tens of thousands of matches (phone-shaped digit groups at the
 * content cap) costs n log n, not n squared.
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
  /** Per category, the disjoint ranges its findings cover, sorted. */
  private readonly covered = new Map<string, Array<Covered>>()
  constructor(private readonly detector: DetectorName) {}

  add(category: string, span: Span, message: string, score?: number) {
    const key = `${category}:${span.start}:${span.end}`
    if (score === undefined && this.seen.has(key)) return
    this.seen.add(key)
    const target = this.cover(category, span, this.findings.length)
    if (target === this.findings.length) {
      this.findings.push({ category, score, spans: [span], message })
      return
    }
    const finding = this.findings[target]!
    finding.spans = unionSpans([...finding.spans, span])
    if (score !== undefined && (finding.score === undefined || score > finding.score)) finding.score = score
  }

  /** One finding with all these spans (a leak reproduced in several places is one finding). */
  addAll(category: string, spans: ReadonlyArray<Span>, message: string, score?: number) {
    if (spans.length === 0) return
    const union = unionSpans(spans)
    for (const span of union) this.cover(category, span, this.findings.length)
    this.findings.push({ category, score, spans: union, message })
  }

  /**
   * Records that `span` is covered; answers the first finding of the category whose range it overlaps, or
   * `fresh` (the finding about to be added) when it overlaps none.
   */
  private cover(category: string, span: Span, fresh: number): number {
    let ranges = this.covered.get(category)
    if (ranges === undefined) this.covered.set(category, (ranges = []))
    // The covered ranges this span overlaps: a contiguous run, found by binary search.
    const from = firstEndingAfter(ranges, span.start)
    let to = from
    let target = fresh
    while (to < ranges.length && ranges[to]!.start <= span.end) {
      const range = ranges[to]!
      if (!overlaps(range, span) && !sameRange(range, span)) break
      target = Math.min(target, range.finding)
      to++
    }
    const start = to > from ? Math.min(span.start, ranges[from]!.start) : span.start
    const end = to > from ? Math.max(span.end, ranges[to - 1]!.end) : span.end
    ranges.splice(from, to - from, { start, end, finding: target })
    return target
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
