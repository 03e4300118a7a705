/** The latency sketch merges exactly and answers quantiles within a bin; range covers count each bucket once. */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { bucketStart, rowsOf } from "../../src/analytics/Aggregates.js"
import { cover } from "../../src/analytics/Query.js"
import { binOf, emptySketch, merge, quantile, record, upperBoundOf } from "../../src/analytics/Sketch.js"

const exactQuantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!
}

describe("latency sketch", () => {
  it("a value falls in a bin whose upper bound is within 10 % above it", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 500_000 }), (value) => {
        const bin = binOf(value)
        expect(upperBoundOf(bin)).toBeGreaterThanOrEqual(value)
        expect(upperBoundOf(bin)).toBeLessThanOrEqual(Math.ceil(value * 1.1) + 1)
        if (bin > 0) expect(upperBoundOf(bin - 1)).toBeLessThan(value)
      })
    )
  })

  it("merged sketches answer the p95 of all values, within one bin", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 60_000 }), { minLength: 1, maxLength: 200 }),
        fc.array(fc.integer({ min: 0, max: 60_000 }), { maxLength: 200 }),
        (left, right) => {
          const a = emptySketch()
          const b = emptySketch()
          left.forEach((value) => record(a, value))
          right.forEach((value) => record(b, value))
          const all = emptySketch()
          ;[...left, ...right].forEach((value) => record(all, value))
          expect(merge(a, b)).toEqual(all)
          const truth = exactQuantile([...left, ...right], 0.95)
          expect(quantile(all, 0.95)).toBe(upperBoundOf(binOf(truth)))
        }
      )
    )
    expect(quantile(emptySketch(), 0.95)).toBe(0)
  })
})

describe("aggregate rows", () => {
  it("deltas of the same bucket and dimensions merge into one row per granularity, whatever the key order", () => {
    const at = new Date("2026-03-04T05:06:07.000Z")
    const rows = rowsOf([
      { workspaceId: "w", at, series: "decisions", dims: { b: "2", a: "1" }, value: 1, latencyMs: 5 },
      { workspaceId: "w", at, series: "decisions", dims: { a: "1", b: "2", c: null }, value: 1, latencyMs: 5 }
    ])
    expect(rows.map((row) => [row.granularity, row.value, row.dims])).toEqual([
      ["day", 2, '{"a":"1","b":"2"}'],
      ["hour", 2, '{"a":"1","b":"2"}'],
      ["minute", 2, '{"a":"1","b":"2"}']
    ])
    expect(rows[0]!.sketch![5]).toBe(2)
  })
})

describe("range cover", () => {
  it("covers [start, end) at minute resolution with disjoint aligned segments", () => {
    const minute = 60_000
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 * 24 * 60 }),
        fc.integer({ min: 1, max: 10 * 24 * 60 }),
        (startMinute, length) => {
          const origin = Date.parse("2026-01-01T00:00:00.000Z")
          const start = new Date(origin + startMinute * minute)
          const end = new Date(start.getTime() + length * minute)
          const segments = cover(start, end)
          let covered = 0
          for (const segment of segments) {
            expect(bucketStart(segment.from, segment.granularity)).toEqual(segment.from)
            expect(bucketStart(segment.to, segment.granularity)).toEqual(segment.to)
            covered += segment.to.getTime() - segment.from.getTime()
          }
          expect(covered).toBe(length * minute)
          const sorted = [...segments].sort((a, b) => a.from.getTime() - b.from.getTime())
          for (let i = 1; i < sorted.length; i++)
            expect(sorted[i]!.from.getTime()).toBeGreaterThanOrEqual(sorted[i - 1]!.to.getTime())
          expect(sorted[0]!.from).toEqual(start)
          expect(sorted[sorted.length - 1]!.to).toEqual(end)
        }
      )
    )
  })
})
