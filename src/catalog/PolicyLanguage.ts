/**
 * The policy language: YAML/JSON text -> validated `PolicyDocument` -> `CompiledPolicy` matcher.
 * Validation collects every problem (schema and semantic) with a dotted `path`, so an author can
 * fix a document in one round trip. Compilation does all the expensive work once (regexes,
 * lowercased literals, target paths), because matching runs for every policy on every event.
 * Nothing here throws: failures come back as `Either` values or `valid: false` results.
 */
import { Either, JSONSchema, Schema } from "effect"
import { Lexer, LineCounter, parseDocument } from "yaml"
import type { EventKind } from "../authorization/Domain.js"
import { PolicyDocument, ValidationResult } from "./Domain.js"
import { unstorableJson } from "../platform/Json.js"
import { Limits } from "../platform/Schemas.js"
import type { PolicyAction, PolicyMatch } from "./PolicyFinders.js"
import { isLeaf } from "./MatchSchemas.js"
import { type CompiledLeaf, compileMatch, type Evaluate, type PolicyAgent, type RunLeaf } from "./PolicyMatching.js"
import {
  hasPositiveLeaf,
  isFields,
  kindOf,
  matchErrors,
  type PolicyError,
  schemaErrors
} from "./PolicyMatchValidation.js"

import { MAX_POLICY_MATCHES } from "./PolicyFinders.js"

export { MAX_POLICY_MATCHES, type PolicyAction, type PolicyMatch } from "./PolicyFinders.js"
export type { PolicyAgent } from "./PolicyMatching.js"
export type { PolicyError } from "./PolicyMatchValidation.js"

export type PolicyErrors = ReadonlyArray<PolicyError>
export type PolicyValidation = typeof ValidationResult.Type

type Fields = { readonly [key: string]: unknown }

// ---- text -> value

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
  // A %YAML 1.1 directive changes what plain values mean (`n` becomes false, `!!set` an object): one meaning only.
  if (doc.directives?.yaml.version !== "1.2") {
    return Either.left([
      {
        path: "",
        message: "Only YAML 1.2 documents are accepted; remove the %YAML directive (it changes what values mean)"
      }
    ])
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
// The document without its match: the match is validated node by node (PolicyMatchValidation.ts).
const decodeShell = Schema.decodeUnknownEither(Schema.Struct({ ...PolicyDocument.fields, match: Schema.Unknown }), {
  errors: "all"
})

// ---- semantic errors (cross-field rules the schema cannot express)

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
  if (doc["action"] === "rewrite" && !hasPositiveLeaf(doc["match"]) && isFields(doc["match"])) {
    errors.push({
      path: "match",
      message: "A rewrite needs text to replace: a match whose every leaf is under not has none"
    })
  }
  return [...errors, ...matchErrors(doc["match"])]
}

// ---- validation

/** Path segments of the /v1/policies routes that an id would shadow. */
const RESERVED_IDS = new Set(["schema", "batch", "packs", "validate", "draft"])

/** Validates a parsed document, reporting every schema and semantic error at once. */
export const validatePolicy = (value: unknown): PolicyValidation => {
  const decoded = decodeShell(value)
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
  /** The stored version it was compiled from (findings name it); absent for a document not stored (dry-run candidates, tests). */
  readonly version?: number
  readonly description: string
  readonly family: PolicyDocument["family"]
  readonly severity: PolicyDocument["severity"]
  readonly action: PolicyDocument["action"]
  readonly ownerAgentId: string | null
  readonly rewrite: string | null
  /** A matching defer escalates to a human. */
  readonly escalate: boolean
  /** The targets its leaves read, in document order, without repeats. */
  readonly targets: ReadonlyArray<string>
  /** The event kinds it screens (`applies_to`; default output.proposed). */
  readonly appliesTo: ReadonlySet<EventKind>
  /** `mode: observe`: its findings are recorded and never set the effect. */
  readonly observe: boolean
  /** Empty for a valid document. Otherwise why it is invalid; such a policy never matches. */
  readonly errors: PolicyErrors
  /**
   * The positive leaves' matches when the policy's match holds, at raw offsets of their target's
   * value (possibly none, e.g. a `not`); null when it does not hold. `agent`: the event's agent
   * profile, which system_prompt_leak compares with.
   */
  readonly evaluate: (action: PolicyAction, agent?: PolicyAgent) => ReadonlyArray<PolicyMatch> | null
  /** `evaluate`'s matches, or none when it does not hold. */
  readonly match: (action: PolicyAction, agent?: PolicyAgent) => ReadonlyArray<PolicyMatch>
  /**
   * The matches to rewrite in `text` (as the action's content): a single-leaf policy finds them in
   * the text whatever its target, as it always did; in a composite, leaves on `content` read the
   * text and the others read `action`, and only content matches are returned.
   */
  readonly matchText: (text: string, action?: PolicyAction, agent?: PolicyAgent) => ReadonlyArray<PolicyMatch>
}

/** What a policy screens when it does not say: what the agent proposes, as before event kinds existed. */
const DEFAULT_APPLIES_TO: ReadonlyArray<EventKind> = ["output.proposed"]

const noMatches: ReadonlyArray<PolicyMatch> = []
const never: Evaluate = () => null

/** Runs a leaf into a fresh list. */
const collect = (run: (out: Array<PolicyMatch>) => void): ReadonlyArray<PolicyMatch> => {
  const out: Array<PolicyMatch> = []
  run(out)
  return out.length === 0 ? noMatches : out
}

/**
 * Compiles a decoded document (validated earlier, e.g. on create). Total: a document breaking the
 * semantic rules (bad target, unsafe regex, ...) is not run; it gets `errors` and never matches.
 */
export const compilePolicy = (doc: PolicyDocument, version?: number): CompiledPolicy => {
  const semantic = semanticErrors(doc)
  const leaves: Array<CompiledLeaf> = []
  const compiled: Either.Either<Evaluate, PolicyErrors> =
    semantic.length > 0 ? Either.left(semantic) : compileMatch(doc.match, "match", leaves)
  const evaluate = Either.getOrElse(compiled, () => never)
  // A match that is a single leaf (the common case) runs without the tree.
  const bare = Either.isRight(compiled) && isLeaf(doc.match) ? leaves[0] : undefined
  const single = bare !== undefined
  const overAction =
    (action: PolicyAction, agent: PolicyAgent | undefined): RunLeaf =>
    (leaf) =>
      collect((out) => leaf.search(action, out, agent))
  const overText =
    (text: string, action: PolicyAction | undefined, agent: PolicyAgent | undefined): RunLeaf =>
    (leaf) =>
      single || leaf.target === "content"
        ? collect((out) => leaf.find(text, "content", out, agent))
        : action === undefined
          ? noMatches
          : collect((out) => leaf.search(action, out, agent))
  // Runs for every policy on every event.
  const evaluateAction = (action: PolicyAction, agent?: PolicyAgent): ReadonlyArray<PolicyMatch> | null => {
    if (bare === undefined) return evaluate(overAction(action, agent))
    const out: Array<PolicyMatch> = []
    bare.search(action, out, agent)
    return out.length === 0 ? null : out
  }
  return {
    id: doc.id,
    ...(version === undefined ? {} : { version }),
    description: doc.description,
    family: doc.family,
    severity: doc.severity,
    action: doc.action,
    ownerAgentId: doc.owner_agent_id ?? null,
    rewrite: doc.rewrite ?? null,
    escalate: doc.escalate === true,
    targets: [...new Set(leaves.map((leaf) => leaf.target))],
    appliesTo: new Set(doc.applies_to ?? DEFAULT_APPLIES_TO),
    observe: doc.mode === "observe",
    errors: Either.isLeft(compiled) ? compiled.left : [],
    evaluate: evaluateAction,
    match: (action, agent) => evaluateAction(action, agent) ?? noMatches,
    matchText: (text, action, agent) =>
      (evaluate(overText(text, action, agent)) ?? noMatches).filter((m) => m.target === "content")
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
 * The ranges to replace: sorted, overlapping or adjacent ones merged (a match found in several
 * views, or by several leaves, is replaced once).
 */
export const mergeSpans = (matches: ReadonlyArray<{ readonly start: number; readonly end: number }>) => {
  const sorted = [...matches].sort((a, b) => a.start - b.start || a.end - b.end)
  const merged: Array<{ start: number; end: number }> = []
  for (const { start, end } of sorted) {
    const last = merged[merged.length - 1]
    if (last !== undefined && start <= last.end) last.end = Math.max(last.end, end)
    else merged.push({ start, end })
  }
  return merged
}

/**
 * Replaces every matched range of `content` with the policy's rewrite text (inserted literally, no
 * `$1` expansion). `action` and `agent` are the event's, for composites and detectors that read
 * them. No rewrite text: unchanged. Undefined when `content` holds more matches than a policy may
 * rewrite (MAX_POLICY_MATCHES): rewriting the first only would let the rest through.
 */
export const applyRewrite = (
  policy: CompiledPolicy,
  content: string,
  action?: PolicyAction,
  agent?: PolicyAgent
): string | undefined => {
  if (policy.rewrite === null) return content
  const matches = policy.matchText(content, action, agent)
  if (matches.length === 0) return content
  if (matches.length > MAX_POLICY_MATCHES) return undefined
  return replaceSpans(content, matches, policy.rewrite)
}

/** `text` with every range of `spans` (overlapping ones merged) replaced by `replacement`. */
export const replaceSpans = (
  text: string,
  spans: ReadonlyArray<{ readonly start: number; readonly end: number }>,
  replacement: string
) => {
  let result = ""
  let last = 0
  for (const span of mergeSpans(spans)) {
    result += text.slice(last, span.start) + replacement
    last = span.end
  }
  return result + text.slice(last)
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
