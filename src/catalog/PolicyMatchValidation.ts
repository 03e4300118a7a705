/**
 * Validation of a policy's `match`, node by node. A union of nine shapes decoded at once reports
 * one issue per member; instead each node's keys say which member it means (`all`, `any`, `not`,
 * `type: detector` + `detector`, else a simple match), that member's Schema reports its errors with
 * paths (`match.all.1.threshold`), and the cross-field rules (target syntax, value per type, regex
 * safety, depth) are checked here.
 */
import { Either, ParseResult, Schema } from "effect"
import { shortMessage } from "../platform/Schemas.js"
import {
  childList,
  DetectorLeaf,
  DetectorMatches,
  LeafType,
  MAX_MATCH_CHILDREN,
  MAX_MATCH_DEPTH,
  SimpleMatch
} from "./MatchSchemas.js"
import { regexMatchesEmpty } from "./RegexSafety.js"
import { regexProblem } from "./UserRegex.js"

export interface PolicyError {
  readonly path: string
  readonly message: string
}

type Fields = { readonly [key: string]: unknown }
export const isFields = (u: unknown): u is Fields => typeof u === "object" && u !== null && !Array.isArray(u)

export const kindOf = (u: unknown): string =>
  Array.isArray(u) ? "a list" : u === null ? "null" : typeof u === "string" ? "a string" : `a ${typeof u}`

const join = (prefix: string, path: string) => (prefix === "" ? path : path === "" ? prefix : `${prefix}.${path}`)

// ---- schema errors

/**
 * Turns parse issues into `{path, message}` under `prefix`. A union reports one issue per member,
 * so: drop the "Expected undefined" of optional fields, keep only the deepest path when a member
 * went deeper (`match.value.1` over `match.value`), and merge the rest into `Expected A | B, actual X`.
 */
export const schemaErrors = (error: ParseResult.ParseError, prefix = ""): Array<PolicyError> => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => ({ path: join(prefix, issue.path.map(String).join(".")), message: shortMessage(issue.message) }))
    .filter((issue) => !issue.message.startsWith("Expected undefined,"))
  const paths = issues.map((issue) => issue.path)
  const deepest = issues.filter((issue) => !paths.some((p) => p.startsWith(`${issue.path}.`)))
  const byPath = new Map<string, Array<string>>()
  for (const issue of deepest) byPath.set(issue.path, [...(byPath.get(issue.path) ?? []), issue.message])
  return [...byPath].flatMap(([path, messages]) => mergeExpected(messages).map((message) => ({ path, message })))
}

const mergeExpected = (messages: ReadonlyArray<string>): ReadonlyArray<string> => {
  const expected: Array<string> = []
  let actual: string | null = null
  const others: Array<string> = []
  for (const message of messages) {
    const m = /^Expected (.*), actual (.*)$/s.exec(message)
    if (m !== null && (actual === null || actual === m[2])) {
      expected.push(m[1]!)
      actual = m[2]!
    } else others.push(message === "is missing" ? "Required field is missing" : message)
  }
  return actual === null ? others : [`Expected ${expected.join(" | ")}, actual ${actual}`, ...others]
}

const errorsOf =
  (schema: Schema.Schema.AnyNoContext) =>
  (value: unknown, prefix: string): Array<PolicyError> => {
    const decoded = Schema.decodeUnknownEither(schema, { errors: "all" })(value)
    return Either.isLeft(decoded) ? schemaErrors(decoded.left, prefix) : []
  }

// The `type` accepts every leaf type, so a wrong one is reported as `Expected "literal" | ... | "detector"`.
const simpleErrors = errorsOf(Schema.Struct({ ...SimpleMatch.fields, type: LeafType }))
const detectorLeafErrors = errorsOf(DetectorLeaf)
const detectorErrors = Object.fromEntries(
  Object.entries(DetectorMatches).map(([name, schema]) => [name, errorsOf(schema)])
)
const allErrors = errorsOf(Schema.Struct({ all: childList(Schema.Unknown) }))
const anyErrors = errorsOf(Schema.Struct({ any: childList(Schema.Unknown) }))

// ---- cross-field rules of a leaf

const IDENT = "[A-Za-z_][A-Za-z0-9_-]*"
const INDEX = "0|[1-9][0-9]*"
const TARGET = new RegExp(`^(?:content|operation|params(?:\\.(?:${IDENT}|${INDEX}))+)$`)

const regexErrors = (pattern: string, caseSensitive: boolean): Array<string> => {
  const problem = regexProblem(pattern, { caseSensitive })
  if (problem !== undefined) {
    return [
      `Unsupported regex: ${problem}. Policies run on RE2 (linear time): back-references and lookarounds are not supported`
    ]
  }
  if (regexMatchesEmpty(pattern)) {
    return ["The regex can match empty text, so it would match everywhere; require at least one character"]
  }
  return []
}

const valueErrors = (path: string, type: unknown, value: unknown, caseSensitive: boolean): Array<string> => {
  if (type === "literal" || type === "regex") {
    if (Array.isArray(value)) return [`${path}.value must be a single string for type ${type} (use any_of for a list)`]
    if (value === "") return [`${path}.value must not be empty`]
    return type === "regex" && typeof value === "string" ? regexErrors(value, caseSensitive) : []
  }
  if (type === "any_of") {
    if (typeof value === "string") return [`${path}.value must be a list of strings for type any_of`]
    if (!Array.isArray(value)) return []
    if (value.length === 0) return [`${path}.value must list at least one string`]
    return value.flatMap((item, i) => (item === "" ? [`${path}.value[${i}] must not be empty`] : []))
  }
  return []
}

const leafRuleErrors = (node: Fields, path: string): Array<PolicyError> => {
  const errors: Array<PolicyError> = []
  const target = node["target"]
  if (typeof target === "string" && !TARGET.test(target)) {
    errors.push({
      path: `${path}.target`,
      message: `${path}.target must be content, operation or params.<path> (dot-separated keys and array indexes, e.g. params.to.0), got "${target}"`
    })
  }
  for (const message of valueErrors(path, node["type"], node["value"], node["case_sensitive"] === true)) {
    errors.push({ path: `${path}.value`, message })
  }
  return errors
}

// ---- one node

const COMPOSITE_KEYS = ["type", "all", "any", "not"] as const

/**
 * Every error of the match node at `path` (e.g. `match`, `match.all.1`), `depth` composites deep.
 * Children are visited only up to the list cap, so a hostile document costs bounded work.
 */
export const matchErrors = (node: unknown, path = "match", depth = 0): Array<PolicyError> => {
  if (node === undefined) return [{ path, message: "Required field is missing" }]
  if (!isFields(node)) return [{ path, message: `Expected a match (a mapping), actual ${kindOf(node)}` }]
  const present = COMPOSITE_KEYS.filter((key) => node[key] !== undefined)
  if (present.length > 1) {
    return [{ path, message: `A match has exactly one of type, all, any or not; got ${present.join(" and ")}` }]
  }
  const composite = present[0] === "type" ? undefined : present[0]
  if (composite !== undefined && depth >= MAX_MATCH_DEPTH) {
    return [{ path: `${path}.${composite}`, message: `all, any and not nest at most ${MAX_MATCH_DEPTH} deep` }]
  }
  if (composite === "not") return matchErrors(node["not"], `${path}.not`, depth + 1)
  if (composite === "all" || composite === "any") {
    const children = node[composite]
    const own = (composite === "all" ? allErrors : anyErrors)(node, path)
    if (!Array.isArray(children)) return own
    return [
      ...own,
      ...children
        .slice(0, MAX_MATCH_CHILDREN)
        .flatMap((child, i) => matchErrors(child, `${path}.${composite}.${i}`, depth + 1))
    ]
  }
  if (node["type"] === "detector") {
    const detector = node["detector"]
    const ofDetector = typeof detector === "string" ? detectorErrors[detector] : undefined
    return [...(ofDetector ?? detectorLeafErrors)(node, path), ...leafRuleErrors(node, path)]
  }
  return [...simpleErrors(node, path), ...leafRuleErrors(node, path)]
}

/**
 * Whether a match can report spans: a leaf reached without passing through `not` (a `not` matches
 * when its child does not, so it has nothing to point at). A rewrite needs one.
 */
export const hasPositiveLeaf = (node: unknown): boolean => {
  if (!isFields(node)) return false
  if (node["type"] !== undefined) return true
  for (const key of ["all", "any"] as const) {
    const children = node[key]
    if (Array.isArray(children)) return children.slice(0, MAX_MATCH_CHILDREN).some(hasPositiveLeaf)
  }
  return false
}
