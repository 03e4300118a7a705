/**
 * The policy language: YAML/JSON text -> validated `PolicyDocument` -> `CompiledPolicy` matcher.
 * Validation collects every problem (schema and semantic) with a dotted `path`, so an author can
 * fix a document in one round trip. Compilation does all the expensive work once (regexes,
 * lowercased literals, target paths), because matching runs for every policy on every event.
 * Nothing here throws: failures come back as `Either` values or `valid: false` results.
 */
import { Either, JSONSchema, ParseResult, Schema } from "effect"
import { Lexer, LineCounter, parseDocument } from "yaml"
import type { EventKind } from "../authorization/Domain.js"
import { PolicyDocument, ValidationResult } from "./Domain.js"
import { unstorableJson } from "../platform/Json.js"
import { Limits, shortMessage } from "../platform/Schemas.js"
import { regexMatchesEmpty } from "./RegexSafety.js"
import { compileUserRegex } from "./UserRegex.js"
import { type Finder, findNothing, makeFinder, type PolicyAction, type PolicyMatch } from "./PolicyFinders.js"

export { MAX_POLICY_MATCHES, type PolicyAction, type PolicyMatch } from "./PolicyFinders.js"

export interface PolicyError {
  readonly path: string
  readonly message: string
}
export type PolicyErrors = ReadonlyArray<PolicyError>
export type PolicyValidation = typeof ValidationResult.Type

type Fields = { readonly [key: string]: unknown }
const isFields = (u: unknown): u is Fields => typeof u === "object" && u !== null && !Array.isArray(u)

// ---- text -> value

const kindOf = (u: unknown): string =>
  Array.isArray(u) ? "a list" : u === null ? "null" : typeof u === "string" ? "a string" : `a ${typeof u}`

/**
 * Parses YAML or JSON text (JSON is YAML 1.2) into a mapping; syntax errors carry 1-based line and
 * column. Not policy-specific: agent profiles are read with it too.
 */
export const parseDocumentText = (text: string): Either.Either<Fields, PolicyErrors> => {
  const empty = [{ path: "", message: "The document is empty; expected YAML or JSON" }]
  if (text.trim() === "") return Either.left(empty)
  if (text.includes("\u0000")) return Either.left([{ path: "", message: "The document contains a NUL character" }])
  if (tooManyTokens(text)) {
    return Either.left([
      {
        path: "",
        message: `The document has more than ${Limits.yaml.tokens.toLocaleString("en-US")} YAML tokens; split it or shorten its lists`
      }
    ])
  }
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true })
  if (doc.errors.length > 0) {
    return Either.left(
      doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0])
        return { path: "", message: `YAML syntax error at line ${line}, column ${col}: ${error.message}` }
      })
    )
  }
  // toJS can still refuse (e.g. alias bombs beyond maxAliasCount): keep that as a result too.
  const converted = Either.try({
    try: (): unknown => doc.toJS({ maxAliasCount: 100 }),
    catch: (error) => [
      { path: "", message: `YAML could not be read: ${error instanceof Error ? error.message : String(error)}` }
    ]
  })
  return Either.flatMap(converted, (value) =>
    value === null || value === undefined
      ? Either.left(empty)
      : isFields(value)
        ? Either.fromNullable(unstorableJson(value), () => value).pipe(
            Either.flip,
            Either.mapLeft((problem) => [problem])
          )
        : Either.left([{ path: "", message: `The document must be a mapping of fields, got ${kindOf(value)}` }])
  )
}

/**
 * Parsing grows with the number of YAML nodes, badly so for large mappings
 * (unique-key checks), while lexing is cheap: count tokens first, stopping
 * at the cap, so a hostile document costs milliseconds, not seconds.
 */
const tooManyTokens = (text: string): boolean => {
  let tokens = 0
  for (const _ of new Lexer().lex(text)) if (++tokens > Limits.yaml.tokens) return true
  return false
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

/** A request body (bytes or text) parsed like `parseDocumentText`; invalid UTF-8 is an error too. */
export const readDocument = (body: Uint8Array | string): Either.Either<Fields, PolicyErrors> =>
  typeof body === "string"
    ? parseDocumentText(body)
    : Either.flatMap(
        Either.try({
          try: () => utf8.decode(body),
          catch: () => [{ path: "", message: "The document is not valid UTF-8 text" }]
        }),
        parseDocumentText
      )

// ---- schema errors

const decodeDocument = Schema.decodeUnknownEither(PolicyDocument, { errors: "all" })

/**
 * Turns parse issues into `{path, message}`. A union reports one issue per member, so: drop the
 * "Expected undefined" of optional fields, keep only the deepest path when a member went deeper
 * (`match.value.1` over `match.value`), and merge the rest into `Expected A | B, actual X`.
 */
const schemaErrors = (error: ParseResult.ParseError): Array<PolicyError> => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => ({ path: issue.path.map(String).join("."), message: shortMessage(issue.message) }))
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

// ---- semantic errors (cross-field rules the schema cannot express)

const IDENT = "[A-Za-z_][A-Za-z0-9_-]*"
const INDEX = "0|[1-9][0-9]*"
const TARGET = new RegExp(`^(?:content|operation|params(?:\\.(?:${IDENT}|${INDEX}))+)$`)
const isIndex = (segment: string): boolean => /^(?:0|[1-9][0-9]*)$/.test(segment)

const regexErrors = (pattern: string, caseSensitive: boolean): Array<string> => {
  const compiled = compileUserRegex(pattern, { caseSensitive })
  if (Either.isLeft(compiled)) {
    return [
      `Unsupported regex: ${compiled.left}. Policies run on RE2 (linear time): back-references and lookarounds are not supported`
    ]
  }
  if (regexMatchesEmpty(pattern)) {
    return ["The regex can match empty text, so it would match everywhere; require at least one character"]
  }
  return []
}

const valueErrors = (type: unknown, value: unknown, caseSensitive: boolean): Array<string> => {
  if (type === "literal" || type === "regex") {
    if (Array.isArray(value)) return [`match.value must be a single string for type ${type} (use any_of for a list)`]
    if (value === "") return ["match.value must not be empty"]
    return type === "regex" && typeof value === "string" ? regexErrors(value, caseSensitive) : []
  }
  if (type === "any_of") {
    if (typeof value === "string") return ["match.value must be a list of strings for type any_of"]
    if (!Array.isArray(value)) return []
    if (value.length === 0) return ["match.value must list at least one string"]
    return value.flatMap((item, i) => (item === "" ? [`match.value[${i}] must not be empty`] : []))
  }
  return []
}

const semanticErrors = (doc: unknown): Array<PolicyError> => {
  if (!isFields(doc)) return []
  const errors: Array<PolicyError> = []
  if (doc["action"] === "rewrite" && (doc["rewrite"] === undefined || doc["rewrite"] === "")) {
    errors.push({ path: "rewrite", message: "rewrite (the replacement text) is required when action is rewrite" })
  }
  if (typeof doc["owner_agent_id"] === "string" && doc["owner_agent_id"].trim() === "") {
    errors.push({
      path: "owner_agent_id",
      message: "owner_agent_id must not be empty; omit it to apply to every agent"
    })
  }
  const match = doc["match"]
  if (!isFields(match)) return errors
  const target = match["target"]
  if (typeof target === "string" && !TARGET.test(target)) {
    errors.push({
      path: "match.target",
      message: `match.target must be content, operation or params.<path> (dot-separated keys and array indexes, e.g. params.to.0), got "${target}"`
    })
  }
  for (const message of valueErrors(match["type"], match["value"], match["case_sensitive"] === true)) {
    errors.push({ path: "match.value", message })
  }
  return errors
}

// ---- validation

/** Path segments of the /v1/policies routes that an id would shadow. */
const RESERVED_IDS = new Set(["schema", "batch", "packs", "validate", "draft"])

/** Validates a parsed document, reporting every schema and semantic error at once. */
export const validatePolicy = (value: unknown): PolicyValidation => {
  const decoded = decodeDocument(value)
  const reserved =
    isFields(value) && RESERVED_IDS.has(String(value["id"]))
      ? [{ path: "id", message: `id ${String(value["id"])} is reserved by the /v1/policies routes; choose another id` }]
      : []
  const all = [...(Either.isLeft(decoded) ? schemaErrors(decoded.left) : []), ...semanticErrors(value), ...reserved]
  const errors = [...new Map(all.map((e) => [`${e.path}\u0000${e.message}`, e])).values()] // de-duplicated
  const id = isFields(value) ? value["id"] : undefined
  return { valid: errors.length === 0, policy_id: typeof id === "string" ? id : null, errors }
}

/** `POST /v1/policies/validate`: parse then validate; never fails. */
export const validatePolicyText = (text: string): PolicyValidation =>
  Either.match(parseDocumentText(text), {
    onLeft: (errors) => ({ valid: false, policy_id: null, errors }),
    onRight: validatePolicy
  })

/** `POST /v1/policies`: the decoded document when the text is a valid policy, else every error. */
export const decodePolicyText = (text: string): Either.Either<PolicyDocument, PolicyErrors> =>
  Either.flatMap(parseDocumentText(text), (value) => {
    const result = validatePolicy(value)
    if (!result.valid) return Either.left(result.errors)
    return Either.mapLeft(decodeDocument(value), schemaErrors)
  })

// ---- compiled matcher

export interface CompiledPolicy {
  readonly id: string
  readonly description: string
  readonly family: PolicyDocument["family"]
  readonly severity: PolicyDocument["severity"]
  readonly action: PolicyDocument["action"]
  readonly ownerAgentId: string | null
  readonly rewrite: string | null
  /** A matching defer escalates to a human. */
  readonly escalate: boolean
  readonly target: string
  /** The event kinds it screens (`applies_to`; default output.proposed). */
  readonly appliesTo: ReadonlySet<EventKind>
  /** `mode: observe`: its findings are recorded and never set the effect. */
  readonly observe: boolean
  /** Empty for a valid document. Otherwise why it is invalid; such a policy never matches. */
  readonly errors: PolicyErrors
  /** Every match in the targeted value(s), left to right, non-overlapping; empty when none. */
  readonly match: (action: PolicyAction) => ReadonlyArray<PolicyMatch>
  /** Every match in a given text, regardless of target (used for rewriting content). */
  readonly matchText: (text: string) => ReadonlyArray<PolicyMatch>
}

/** What a policy screens when it does not say: what the agent proposes, as before event kinds existed. */
const DEFAULT_APPLIES_TO: ReadonlyArray<EventKind> = ["output.proposed"]

const scalarText = (value: unknown): string | null =>
  typeof value === "string" ? value : typeof value === "number" || typeof value === "boolean" ? String(value) : null

/** Feeds the targeted value(s) of an action to the finder; `params.*` paths are split once here. */
type Search = (action: PolicyAction, out: Array<PolicyMatch>) => void

const makeSearch = (target: string, find: Finder): Search => {
  if (target === "content") {
    return (action, out) => {
      if (action.content !== undefined) find(action.content, target, out)
    }
  }
  if (target === "operation") return (action, out) => find(action.operation, target, out)
  const segments = target.split(".").slice(1)
  return (action, out) => {
    let current: unknown = action.params
    for (const segment of segments) {
      if (Array.isArray(current)) current = isIndex(segment) ? current[Number(segment)] : undefined
      else if (isFields(current)) current = Object.hasOwn(current, segment) ? current[segment] : undefined
      else return
    }
    const scalar = scalarText(current)
    if (scalar !== null) return find(scalar, target, out)
    if (!Array.isArray(current)) return
    current.forEach((item, i) => {
      const text = scalarText(item)
      if (text !== null) find(text, `${target}.${i}`, out)
    })
  }
}

const noMatches: ReadonlyArray<PolicyMatch> = []

const collect = (run: (out: Array<PolicyMatch>) => void): ReadonlyArray<PolicyMatch> => {
  const out: Array<PolicyMatch> = []
  run(out)
  return out.length === 0 ? noMatches : out
}

/**
 * Compiles a decoded document (validated earlier, e.g. on create). Total: a document breaking the
 * semantic rules (bad target, unsafe regex, ...) is not run; it gets `errors` and never matches.
 */
export const compilePolicy = (doc: PolicyDocument): CompiledPolicy => {
  const semantic = semanticErrors(doc)
  const finder =
    semantic.length > 0
      ? Either.left(semantic)
      : Either.mapLeft(makeFinder(doc.match), (message) => [{ path: "match.value", message }])
  const find = Either.getOrElse(finder, () => findNothing)
  const search: Search = Either.isRight(finder) ? makeSearch(doc.match.target, find) : () => undefined
  return {
    id: doc.id,
    description: doc.description,
    family: doc.family,
    severity: doc.severity,
    action: doc.action,
    ownerAgentId: doc.owner_agent_id ?? null,
    rewrite: doc.rewrite ?? null,
    escalate: doc.escalate === true,
    target: doc.match.target,
    appliesTo: new Set(doc.applies_to ?? DEFAULT_APPLIES_TO),
    observe: doc.mode === "observe",
    errors: Either.isLeft(finder) ? finder.left : [],
    match: (action) => collect((out) => search(action, out)),
    matchText: (text) => collect((out) => find(text, "content", out))
  }
}

/** Like `compilePolicy`, but an invalid document is a failure instead of a never-matching policy. */
export const tryCompilePolicy = (doc: PolicyDocument): Either.Either<CompiledPolicy, PolicyErrors> => {
  const compiled = compilePolicy(doc)
  return compiled.errors.length === 0 ? Either.right(compiled) : Either.left(compiled.errors)
}

/** Source text (as stored in `source_yaml`) straight to a compiled policy. */
export const compilePolicyText = (text: string): Either.Either<CompiledPolicy, PolicyErrors> =>
  Either.flatMap(decodePolicyText(text), tryCompilePolicy)

/**
 * Replaces every match in `content` with the policy's rewrite text, left to right, without
 * overlaps. The rewrite text is inserted literally (no `$1` expansion). No rewrite text: unchanged.
 */
export const applyRewrite = (policy: CompiledPolicy, content: string): string => {
  if (policy.rewrite === null) return content
  const matches = policy.matchText(content)
  if (matches.length === 0) return content
  let result = ""
  let last = 0
  for (const m of matches) {
    result += content.slice(last, m.start) + policy.rewrite
    last = m.end
  }
  return result + content.slice(last)
}

// ---- JSON Schema

const definitions: Record<string, JSONSchema.JsonSchema7> = {}
// Like JSONSchema.make, but extra keys are allowed, as the API tolerates them.
const root = JSONSchema.fromAST(PolicyDocument.ast, { definitions, additionalPropertiesStrategy: "allow" })

/** Draft-07 JSON Schema of the policy document, served by `GET /v1/policies/schema`. */
export const policyJsonSchema: JSONSchema.JsonSchema7Root = {
  $schema: "http://json-schema.org/draft-07/schema#",
  $defs: definitions,
  ...root
}
