/**
 * How far a user's pattern expands when RE2 compiles it, estimated before compiling. re2-wasm
 * compiles on the main thread and in a fixed 16 MiB heap: `\p{L}{40}` took over a second and
 * `\p{L}{100}` ran the heap out, aborting the engine. Patterns past `MAX_EXPANSION` are refused
 * up front (docs/policies.md). Calibration on this machine (bench/results/regex-expansion.txt):
 * at the bound, compiles take up to about 300 ms and none aborts.
 */

/** An atom's weight, relative to one literal character: a Unicode property class compiles to hundreds of ranges. */
const PROPERTY_WEIGHT = 1000
/** `.`, negated classes and `\S`, `\W`, `\D`: every code point but a few, several UTF-8 byte ranges. */
const WIDE_WEIGHT = 4
/** The most a pattern may expand to (for example `\p{L}{10}`, `.{1000}` twice, `(?:abcdefghij){1000}`). */
export const MAX_EXPANSION = 10_000

/** Reads a counted repeat `{n}`, `{n,}` or `{n,m}` at `at`: how many copies RE2 makes, and where it ends. */
const countedRepeat = (source: string, at: number): { copies: number; end: number } | undefined => {
  const found = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(at, at + 16))
  if (found === null) return undefined
  const low = Number(found[1])
  const copies = found[2] === undefined ? low : found[3] === "" ? low + 1 : Number(found[3])
  return { copies: Math.max(copies, 1), end: at + found[0].length }
}

/** The class `[...]` starting at `at`: its weight and where it ends. */
const classAt = (source: string, at: number): { weight: number; end: number } => {
  let index = at + 1
  if (source[index] === "^") index++
  if (source[index] === "]") index++
  let weight = source[at + 1] === "^" ? WIDE_WEIGHT : 1
  while (index < source.length && source[index] !== "]") {
    if (source.startsWith("[:", index)) {
      const close = source.indexOf(":]", index + 2)
      if (source[index + 2] === "^") weight = Math.max(weight, WIDE_WEIGHT)
      index = close < 0 ? source.length : close + 2
      continue
    }
    if (source[index] === "\\") {
      const escaped = source[index + 1] ?? ""
      if (escaped === "p" || escaped === "P") weight = PROPERTY_WEIGHT
      else if ("SWD".includes(escaped)) weight = Math.max(weight, WIDE_WEIGHT)
      index += 2
      continue
    }
    index++
  }
  return { weight, end: index + 1 }
}

/**
 * About how large RE2's compiled program for `source` grows: each atom's weight times the copies
 * its enclosing counted repeats make (RE2 expands `x{n,m}` into m copies of x).
 */
export const expansionOf = (source: string): number => {
  const groups: Array<number> = [0]
  let last = 0
  let index = 0
  const add = (weight: number) => {
    groups[groups.length - 1]! += weight
    last = weight
  }
  while (index < source.length) {
    const char = source[index]!
    if (char === "(") {
      if (source[index + 1] === "?" && /^\(\?[a-zA-Z-]*\)/.test(source.slice(index, index + 12))) {
        index = source.indexOf(")", index) + 1
        last = 0
        continue
      }
      groups.push(0)
      index++
      if (source[index] === "?") {
        while (index < source.length && source[index] !== ":" && source[index] !== ">") index++
        index++
      }
      continue
    }
    if (char === ")") {
      const inner = groups.length > 1 ? groups.pop()! : 0
      add(inner)
      index++
      continue
    }
    if (char === "{") {
      const repeat = countedRepeat(source, index)
      if (repeat !== undefined) {
        groups[groups.length - 1]! += last * (repeat.copies - 1)
        last *= repeat.copies
        index = repeat.end
        continue
      }
    }
    if (char === "[") {
      const { weight, end } = classAt(source, index)
      add(weight)
      index = end
      continue
    }
    if (char === "\\") {
      const escaped = source[index + 1] ?? ""
      if (escaped === "p" || escaped === "P") {
        add(PROPERTY_WEIGHT)
        index += source[index + 2] === "{" ? Math.max(source.indexOf("}", index) + 1 - index, 3) : 3
        continue
      }
      add("SWD".includes(escaped) ? WIDE_WEIGHT : 1)
      // `\x{10FFFF}` is one character, not a counted repeat.
      index = escaped === "x" && source[index + 2] === "{" ? source.indexOf("}", index) + 1 || source.length : index + 2
      continue
    }
    if (char === "*" || char === "+" || char === "?" || char === "|") {
      index++
      if (char === "|") last = 0
      continue
    }
    add(char === "." ? WIDE_WEIGHT : 1)
    index++
  }
  return groups.reduce((sum, weight) => sum + weight, 0)
}
