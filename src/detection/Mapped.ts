/**
 * Views built code unit by code unit, each unit with the raw range that
 * produced it, and the map from view offsets back to raw offsets.
 */
import { codesToString } from "./Codes.js"
import type { Span, TextView, ViewKind } from "./Types.js"

// ---- a growable buffer of UTF-16 code units with, per unit, the raw range that produced it

export class MappedBuilder {
  codes: Uint16Array
  starts: Int32Array
  ends: Int32Array
  length = 0
  constructor(capacity: number) {
    const size = Math.max(16, capacity)
    this.codes = new Uint16Array(size)
    this.starts = new Int32Array(size)
    this.ends = new Int32Array(size)
  }
  push(code: number, rawStart: number, rawEnd: number) {
    if (this.length === this.codes.length) this.grow()
    this.codes[this.length] = code
    this.starts[this.length] = rawStart
    this.ends[this.length] = rawEnd
    this.length++
  }
  private grow() {
    const size = this.codes.length * 2
    const codes = new Uint16Array(size)
    const starts = new Int32Array(size)
    const ends = new Int32Array(size)
    codes.set(this.codes)
    starts.set(this.starts)
    ends.set(this.ends)
    this.codes = codes
    this.starts = starts
    this.ends = ends
  }
  text() {
    return codesToString(this.codes, this.length)
  }
}

/** A view with per-unit raw ranges (`starts`/`ends` undefined: the view's offsets are the raw ones). */
export interface MappedView extends TextView {
  readonly starts: Int32Array | undefined
  readonly ends: Int32Array | undefined
}

export const mappedView = (
  kind: ViewKind,
  text: string,
  starts: Int32Array,
  ends: Int32Array,
  rawLength: number
): MappedView => ({
  kind,
  text,
  starts,
  ends,
  toRaw: (start, end) => {
    if (start >= text.length) return { start: rawLength, end: rawLength }
    const last = Math.min(text.length, end) - 1
    return last < start ? { start: starts[start]!, end: starts[start]! } : { start: starts[start]!, end: ends[last]! }
  }
})

export const identity = (start: number, end: number): Span => ({ start, end })
