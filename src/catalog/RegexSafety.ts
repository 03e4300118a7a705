/**
 * Whether a policy regex can match empty text (such a policy would "match" at every position).
 * Matching itself runs on RE2 (`UserRegex.ts`), which is linear-time whatever the pattern, so the
 * former refusal rules for backtracking shapes are gone; this module only parses the pattern
 * (JavaScript `u`-mode syntax, which policy regexes are written in) to decide nullability.
 * A pattern this parser cannot read counts as not empty; RE2 reports its real problems.
 */

const MAX_DEPTH = 50

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

const parse = (pattern: string): Node | Refused => {
  try {
    return new Parser(pattern).parse()
  } catch (error) {
    // Only `Refused` is thrown by the parser; anything else is a bug, reported as a refusal too.
    return error instanceof Refused ? error : new Refused(`cannot analyse pattern: ${String(error)}`)
  }
}

/**
 * Whether the pattern can match empty text (e.g. `a*`, `\b`): such a policy would "match" at
 * every position. Patterns that do not parse count as not empty (the other checks report them).
 */
export const regexMatchesEmpty = (pattern: string): boolean => {
  const tree = parse(pattern)
  return !(tree instanceof Refused) && nullable(tree)
}
