/**
 * Decision latency as a mergeable sketch: a fixed log-scale histogram. Values
 * 0..15 ms have a bin each; above that each bin is 10 % wider than the one
 * before, up to BINS bins (about 10 minutes). Two sketches merge by adding
 * their bins, so minute, hour and day buckets, and any set of them, combine
 * exactly; a quantile read from a sketch is within one bin (10 %) of the
 * true value, reported as the bin's upper bound.
 */
export const BINS = 128
const LINEAR = 16
const GROWTH = 1.1

export const binOf = (valueMs: number): number => {
  const value = Math.max(0, Math.floor(valueMs))
  if (value < LINEAR) return value
  return Math.min(BINS - 1, LINEAR + Math.floor(Math.log(value / LINEAR) / Math.log(GROWTH)))
}

/** The largest value a bin holds (bins below LINEAR hold one value). */
export const upperBoundOf = (bin: number): number =>
  bin < LINEAR ? bin : Math.ceil(LINEAR * Math.pow(GROWTH, bin - LINEAR + 1)) - 1

export const emptySketch = (): Array<number> => new Array<number>(BINS).fill(0)

export const record = (sketch: Array<number>, valueMs: number, count = 1) => {
  sketch[binOf(valueMs)]! += count
  return sketch
}

export const merge = (into: Array<number>, other: ReadonlyArray<number>) => {
  for (let i = 0; i < other.length && i < BINS; i++) into[i]! += other[i]!
  return into
}

/** The q-quantile (0 < q <= 1) of the recorded values; 0 for an empty sketch. */
export const quantile = (sketch: ReadonlyArray<number>, q: number): number => {
  const total = sketch.reduce((sum, count) => sum + count, 0)
  if (total === 0) return 0
  const rank = Math.max(1, Math.ceil(q * total))
  let seen = 0
  for (let bin = 0; bin < sketch.length; bin++) {
    seen += sketch[bin]!
    if (seen >= rank) return upperBoundOf(bin)
  }
  return upperBoundOf(sketch.length - 1)
}

/** PostgreSQL array literal of a sketch. */
export const toPgArray = (sketch: ReadonlyArray<number>) => `{${sketch.join(",")}}`
