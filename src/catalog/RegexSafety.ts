/**
 * A static, RE2-style safety check for policy regexes. JavaScript's engine backtracks, so a
 * pattern like `(a+)+$` can take exponential time on a crafted input; policies run on every
 * proposed action, so such a pattern would be a denial of service. Rather than time-limit the
 * engine we refuse the shapes that cause backtracking blow-ups, conservatively:
 * - backreferences (`\1`, `\k<name>`) and lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`);
 * - a repeated group whose body contains a variable quantifier (`(a+)+`, `(?:ab*)+`, `(a?){3}`);
 * - a repeated group with alternation whose branches can start with the same character or match
 *   empty text (`(a|a)*`, `(a|ab)+`);
 * - two directly adjacent unbounded repeats over overlapping characters (`.*.*`, `\d+\d*`);
 * - repetition counts above 1000.
 * Case is folded when comparing characters (ASCII only), since policies default to case-insensitive.
 */

export type RegexSafety = { readonly safe: true } | { readonly safe: false; readonly reason: string }

/** Repetition counts above this are refused (they blow up compile time and matching). */
export const MAX_REPEAT = 1000
const MAX_DEPTH = 50
/** Policy regexes are short; a cap keeps the analysis itself cheap. */
export const MAX_PATTERN_LENGTH = 2000

// ---- syntax tree

/** Inclusive code point ranges; a one-character atom (literal, class, dot, escape) matches one of them. */
type CharSet = ReadonlyArray<readonly [number, number]>

type Node =
  | { readonly kind: "char"; readonly set: CharSet; readonly src: string }
  | { readonly kind: "assert"; readonly src: string }
  | { readonly kind: "group"; readonly branches: ReadonlyArray<ReadonlyArray<Node>>; readonly src: string }
  | { readonly kind: "repeat"; readonly body: Node; readonly min: number; readonly max: number; readonly src: string }

/** Parsing stops at the first refused construct; this carries its reason out of the recursion. */
class Refused {
  constructor(readonly reason: string) {}
}

const ANY: CharSet = [[0, 0x10ffff]]
const DIGIT: CharSet = [[0x30, 0x39]]
const WORD: CharSet = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a]
]
const SPACE: CharSet = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff]
]

const complement = (set: CharSet): CharSet => {
  const sorted = [...set].sort((a, b) => a[0] - b[0])
  const out: Array<readonly [number, number]> = []
  let next = 0
  for (const [lo, hi] of sorted) {
    if (lo > next) out.push([next, lo - 1])
    next = Math.max(next, hi + 1)
  }
  if (next <= 0x10ffff) out.push([next, 0x10ffff])
  return out
}

/** Adds the other ASCII case of every letter range, so `A` and `a` compare as overlapping. */
const foldCase = (set: CharSet): CharSet => {
  const out: Array<readonly [number, number]> = [...set]
  for (const [lo, hi] of set) {
    const upLo = Math.max(lo, 0x41),
      upHi = Math.min(hi, 0x5a)
    if (upLo <= upHi) out.push([upLo + 32, upHi + 32])
    const lowLo = Math.max(lo, 0x61),
      lowHi = Math.min(hi, 0x7a)
    if (lowLo <= lowHi) out.push([lowLo - 32, lowHi - 32])
  }
  return out
}

/** The lowest character both sets can match (compared as written first, then case-folded), or null. */
const sharedChar = (a: CharSet, b: CharSet): number | null =>
  lowestShared(a, b) ?? lowestShared(foldCase(a), foldCase(b))

const lowestShared = (a: CharSet, b: CharSet): number | null => {
  let best: number | null = null
  for (const [lo, hi] of a) {
    for (const [l, h] of b) {
      const from = Math.max(lo, l)
      if (from <= Math.min(hi, h) && (best === null || from < best)) best = from
    }
  }
  return best
}

const show = (code: number): string =>
  code > 0x20 && code < 0x7f
    ? `"${String.fromCodePoint(code)}"`
    : `U+${code.toString(16).toUpperCase().padStart(4, "0")}`

// ---- parser (recursive descent over the pattern, JS `u`-mode syntax)

const SIMPLE_ESCAPES: Record<string, number> = { n: 10, r: 13, t: 9, v: 11, f: 12, "0": 0 }

class Parser {
  private pos = 0
  constructor(private readonly src: string) {}

  parse(): Node {
    const node = this.alternation(0)
    if (this.pos < this.src.length) throw new Refused(`unbalanced ")" at position ${this.pos + 1}`)
    return node
  }

  private alternation(depth: number): Node & { kind: "group" } {
    if (depth > MAX_DEPTH) throw new Refused(`groups nested deeper than ${MAX_DEPTH} levels`)
    const start = this.pos
    const branches: Array<ReadonlyArray<Node>> = [this.sequence(depth)]
    while (this.src[this.pos] === "|") {
      this.pos++
      branches.push(this.sequence(depth))
    }
    return { kind: "group", branches, src: this.src.slice(start, this.pos) }
  }

  private sequence(depth: number): Array<Node> {
    const nodes: Array<Node> = []
    while (this.pos < this.src.length && this.src[this.pos] !== "|" && this.src[this.pos] !== ")") {
      const start = this.pos
      const atom = this.atom(depth)
      nodes.push(this.quantified(atom, start))
    }
    return nodes
  }

  private quantified(atom: Node, start: number): Node {
    const bounds = this.quantifier()
    if (bounds === null) return atom
    if (this.src[this.pos] === "?") this.pos++ // lazy: same backtracking shape
    const src = this.src.slice(start, this.pos)
    if (atom.kind === "assert") throw new Refused(`quantifier on an assertion in ${src}`)
    if (bounds.min > MAX_REPEAT || (bounds.max !== Infinity && bounds.max > MAX_REPEAT)) {
      throw new Refused(`repetition count in ${src} exceeds ${MAX_REPEAT}`)
    }
    if (this.quantifier() !== null) throw new Refused(`double quantifier in ${this.src.slice(start, this.pos)}`)
    return { kind: "repeat", body: atom, min: bounds.min, max: bounds.max, src }
  }

  private quantifier(): { min: number; max: number } | null {
    const c = this.src[this.pos]
    if (c === "*" || c === "+" || c === "?") {
      this.pos++
      return { min: c === "+" ? 1 : 0, max: c === "?" ? 1 : Infinity }
    }
    if (c !== "{") return null
    const braces = /\{(\d+)(,(\d*))?\}/y
    braces.lastIndex = this.pos
    const m = braces.exec(this.src)
    if (m === null) return null // a literal "{" (the compile check reports it in u-mode)
    this.pos += m[0].length
    const min = Number(m[1])
    const max = m[2] === undefined ? min : m[3] === "" || m[3] === undefined ? Infinity : Number(m[3])
    return { min, max }
  }

  private atom(depth: number): Node {
    const start = this.pos
    const c = this.src[this.pos++]!
    const char = (set: CharSet): Node => ({ kind: "char", set, src: this.src.slice(start, this.pos) })
    switch (c) {
      case "(":
        return this.group(start, depth)
      case "[":
        return char(this.charClass())
      case ".":
        return char(ANY)
      case "^":
      case "$":
        return { kind: "assert", src: c }
      case "\\":
        return this.escape(start)
      case "*":
      case "+":
      case "?":
        throw new Refused(`nothing to repeat before "${c}" at position ${start + 1}`)
      default:
        return char([[c.codePointAt(0)!, c.codePointAt(0)!]])
    }
  }

  private group(start: number, depth: number): Node {
    const rest = this.src.slice(this.pos, this.pos + 3)
    if (rest.startsWith("?=") || rest.startsWith("?!")) {
      throw new Refused(`lookahead ${this.src.slice(start, this.pos + 2)}...) is not supported; match the text itself`)
    }
    if (rest.startsWith("?<=") || rest.startsWith("?<!")) {
      throw new Refused(`lookbehind ${this.src.slice(start, this.pos + 3)}...) is not supported; match the text itself`)
    }
    if (rest.startsWith("?:")) this.pos += 2
    else if (rest.startsWith("?<")) {
      const m = /^\?<[A-Za-z_$][A-Za-z0-9_$]*>/.exec(this.src.slice(this.pos))
      if (m === null) throw new Refused(`invalid group name at position ${start + 1}`)
      this.pos += m[0].length
    } else if (rest.startsWith("?")) throw new Refused(`unsupported group syntax at position ${start + 1}`)
    const inner = this.alternation(depth + 1)
    if (this.src[this.pos] !== ")") throw new Refused(`unterminated group at position ${start + 1}`)
    this.pos++
    return { ...inner, src: this.src.slice(start, this.pos) }
  }

  /** `\` already consumed. Returns a one-character atom, an assertion, or refuses a backreference. */
  private escape(start: number): Node {
    const c = this.src[this.pos++]
    const char = (set: CharSet): Node => ({ kind: "char", set, src: this.src.slice(start, this.pos) })
    if (c === undefined) throw new Refused("pattern ends with a lone backslash")
    if (c === "b" || c === "B") return { kind: "assert", src: `\\${c}` }
    if (c >= "1" && c <= "9") {
      throw new Refused(`backreference \\${c} is not supported (it needs backtracking); match the text explicitly`)
    }
    if (c === "k" && this.src[this.pos] === "<") {
      throw new Refused(`backreference \\k<...> is not supported (it needs backtracking); match the text explicitly`)
    }
    return char(this.escapeSet(c))
  }

  /** The character set of an escape (after `\c` was consumed), shared by atoms and classes. */
  private escapeSet(c: string): CharSet {
    switch (c) {
      case "d":
        return DIGIT
      case "D":
        return complement(DIGIT)
      case "w":
        return WORD
      case "W":
        return complement(WORD)
      case "s":
        return SPACE
      case "S":
        return complement(SPACE)
      case "p":
      case "P": {
        // Unicode property: skip `{...}` and assume it may match anything (conservative).
        const close = this.src.indexOf("}", this.pos)
        if (this.src[this.pos] === "{" && close > 0) this.pos = close + 1
        return ANY
      }
      case "x":
        return this.hexCode(/^[0-9a-fA-F]{2}/, 2)
      case "u":
        if (this.src[this.pos] === "{") {
          const m = /^\{([0-9a-fA-F]{1,6})\}/.exec(this.src.slice(this.pos))
          if (m !== null) {
            this.pos += m[0].length
            const code = parseInt(m[1]!, 16)
            return [[code, code]]
          }
        }
        return this.hexCode(/^[0-9a-fA-F]{4}/, 4)
      case "c": {
        const letter = this.src[this.pos]
        if (letter !== undefined && /[A-Za-z]/.test(letter)) {
          this.pos++
          const code = letter.charCodeAt(0) % 32
          return [[code, code]]
        }
        return [[0x63, 0x63]]
      }
      default: {
        const code = SIMPLE_ESCAPES[c] ?? c.codePointAt(0)!
        return [[code, code]]
      }
    }
  }

  private hexCode(re: RegExp, length: number): CharSet {
    const m = re.exec(this.src.slice(this.pos, this.pos + length))
    if (m === null) return ANY // malformed; the compile check reports it
    this.pos += length
    const code = parseInt(m[0], 16)
    return [[code, code]]
  }

  /** `[` already consumed; reads up to the closing `]`. */
  private charClass(): CharSet {
    const negated = this.src[this.pos] === "^"
    if (negated) this.pos++
    const ranges: Array<readonly [number, number]> = []
    // In JS a "]" right after "[" closes the class (`[]` is empty), unlike POSIX.
    while (this.pos < this.src.length && this.src[this.pos] !== "]") {
      const lo = this.classAtom()
      if (this.src[this.pos] === "-" && this.src[this.pos + 1] !== "]" && this.pos + 1 < this.src.length) {
        this.pos++
        const hi = this.classAtom()
        if (lo.length === 1 && hi.length === 1 && lo[0]![0] === lo[0]![1] && hi[0]![0] === hi[0]![1]) {
          ranges.push([lo[0]![0], hi[0]![0]])
          continue
        }
        ranges.push(...lo, [0x2d, 0x2d], ...hi)
        continue
      }
      ranges.push(...lo)
    }
    if (this.src[this.pos] !== "]") throw new Refused("unterminated character class")
    this.pos++
    return negated ? complement(ranges) : ranges
  }

  private classAtom(): CharSet {
    const c = this.src[this.pos++]!
    if (c !== "\\") return [[c.codePointAt(0)!, c.codePointAt(0)!]]
    const e = this.src[this.pos++]
    if (e === undefined) throw new Refused("pattern ends with a lone backslash")
    if (e === "b") return [[8, 8]] // backspace inside a class
    return this.escapeSet(e)
  }
}

// ---- analysis

const nullable = (node: Node): boolean => {
  switch (node.kind) {
    case "char":
      return false
    case "assert":
      return true
    case "group":
      return node.branches.some((branch) => branch.every(nullable))
    case "repeat":
      return node.min === 0 || nullable(node.body)
  }
}

/** Characters the node can start with (assertions contribute none). */
const firstChars = (node: Node): CharSet => {
  switch (node.kind) {
    case "char":
      return node.set
    case "assert":
      return []
    case "repeat":
      return firstChars(node.body)
    case "group":
      return node.branches.flatMap(firstOfSequence)
  }
}

const firstOfSequence = (nodes: ReadonlyArray<Node>): CharSet => {
  const out: Array<readonly [number, number]> = []
  for (const node of nodes) {
    out.push(...firstChars(node))
    if (!nullable(node)) break
  }
  return out
}

const children = (node: Node): ReadonlyArray<Node> =>
  node.kind === "group" ? node.branches.flat() : node.kind === "repeat" ? [node.body] : []

const descendants = function* (node: Node): Generator<Node> {
  yield node
  for (const child of children(node)) yield* descendants(child)
}

/** Why a repeated body could backtrack catastrophically, or null. */
const repeatedBodyProblem = (repeat: Node & { kind: "repeat" }): string | null => {
  for (const inner of descendants(repeat.body)) {
    if (inner.kind === "repeat" && inner.min !== inner.max) {
      return `nested quantifier ${repeat.src} can backtrack catastrophically; rewrite without nesting`
    }
    if (inner.kind === "group" && inner.branches.length > 1) {
      if (inner.branches.some((branch) => branch.every(nullable))) {
        return `repeated group ${repeat.src} has a branch that matches empty text; remove the empty branch`
      }
      const firsts = inner.branches.map(firstOfSequence)
      for (let i = 0; i < firsts.length; i++) {
        for (let j = i + 1; j < firsts.length; j++) {
          const shared = sharedChar(firsts[i]!, firsts[j]!)
          if (shared !== null) {
            return (
              `repeated alternation ${repeat.src} has branches that can both start with ${show(shared)}, ` +
              `which can backtrack catastrophically; make each branch start differently`
            )
          }
        }
      }
    }
  }
  return null
}

const isUnboundedChar = (node: Node | undefined): node is Node & { kind: "repeat" } =>
  node !== undefined && node.kind === "repeat" && node.max === Infinity && node.body.kind === "char"

const problem = (node: Node): string | null => {
  if (node.kind === "repeat" && node.max > 1 && node.body.kind !== "char") {
    const found = repeatedBodyProblem(node)
    if (found !== null) return found
  }
  if (node.kind === "group") {
    for (const branch of node.branches) {
      for (let i = 0; i + 1 < branch.length; i++) {
        const a = branch[i],
          b = branch[i + 1]
        if (isUnboundedChar(a) && isUnboundedChar(b) && sharedChar(firstChars(a), firstChars(b)) !== null) {
          return `adjacent repeats ${a.src}${b.src} can split the same text in many ways; merge them into one`
        }
      }
    }
  }
  for (const child of children(node)) {
    const found = problem(child)
    if (found !== null) return found
  }
  return null
}

const parse = (pattern: string): Node | Refused => {
  try {
    return new Parser(pattern).parse()
  } catch (error) {
    // Only `Refused` is thrown by the parser; anything else is a bug, reported as a refusal too.
    return error instanceof Refused ? error : new Refused(`cannot analyse pattern: ${String(error)}`)
  }
}

/** Refuses patterns prone to catastrophic backtracking; see the module comment for the rules. */
export const checkRegexSafety = (pattern: string): RegexSafety => {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    return { safe: false, reason: `pattern is longer than ${MAX_PATTERN_LENGTH} characters` }
  }
  const tree = parse(pattern)
  if (tree instanceof Refused) return { safe: false, reason: tree.reason }
  const found = problem(tree)
  return found === null ? { safe: true } : { safe: false, reason: found }
}

/**
 * Whether the pattern can match empty text (e.g. `a*`, `\b`): such a policy would "match" at
 * every position. Patterns that do not parse count as not empty (the other checks report them).
 */
export const regexMatchesEmpty = (pattern: string): boolean => {
  const tree = parse(pattern)
  return !(tree instanceof Refused) && nullable(tree)
}
