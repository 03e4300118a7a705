/**
 * A policy's `match`, compiled once into an evaluator: leaves (simple matches and detectors) read
 * their target, composites combine them. Normalised matching and detectors share the views of a
 * text (`views()` from src/detection), built at most once per text for all the policies of an event.
 */
import { Either } from "effect"
import { detect, type Finding, type TextView, type TextViews, views } from "../detection/index.js"
import {
  type DetectorMatch,
  isAll,
  isAny,
  isNot,
  type LeafMatch,
  type MatchSpec,
  MAX_MATCH_CHILDREN
} from "./MatchSchemas.js"
import { type Finder, makeFinder, MAX_POLICY_MATCHES, type PolicyAction, type PolicyMatch } from "./PolicyFinders.js"
import type { PolicyError } from "./PolicyMatchValidation.js"

/** What a policy may read of the event's agent profile (system_prompt_leak). */
export interface PolicyAgent {
  readonly system_prompt: string | null
  /** Absent on profiles stored before canaries existed. */
  readonly canaries?: ReadonlyArray<string> | undefined
}

/** Appends the matches of one value; detectors read the agent's profile. */
type LeafFinder = (text: string, target: string, out: Array<PolicyMatch>, agent: PolicyAgent | undefined) => void

// ---- views, shared by every policy of an event

/**
 * The views of the last few texts: an event's policies look at a handful of values (content,
 * some params) and each gets its views built once. `views()` is lazy, so only what a policy asks
 * for (e.g. the decoded views) is computed, and then kept for the next policy.
 */
const MEMO_SIZE = 8
const memo: Array<TextViews> = []
export const viewsFor = (text: string): TextViews => {
  for (const known of memo) if (known.raw === text) return known
  const built = views(text)
  if (memo.length >= MEMO_SIZE) memo.pop()
  memo.unshift(built)
  return built
}

const identity = (start: number, end: number) => ({ start, end })

/** Views that are all the raw text (a detector with `normalize: false`); the phrasing view is it in lower case. */
const rawOnlyViews = (raw: string): TextViews => {
  const rawView: TextView = { kind: "raw", text: raw, toRaw: identity }
  const lower = raw.toLowerCase()
  const phrasing: TextView =
    lower.length === raw.length
      ? { kind: "deobfuscated", text: lower, toRaw: identity }
      : { ...rawView, kind: "folded" }
  return {
    raw,
    rawView,
    folded: rawView,
    deobfuscated: phrasing,
    rot13: rawView,
    decoded: [],
    literal: [rawView],
    rot13Likely: false,
    phrasing: [phrasing]
  }
}

/** The views a normalised simple match searches besides the raw text, without repeats. */
const extraViews = (textViews: TextViews): Array<TextView> => {
  const seen = new Set<string>([textViews.raw])
  const candidates = [
    textViews.folded,
    textViews.deobfuscated,
    ...(textViews.rot13Likely ? [textViews.rot13] : []),
    ...textViews.decoded
  ]
  return candidates.filter((view) => (seen.has(view.text) ? false : (seen.add(view.text), true)))
}

const byStart = (a: PolicyMatch, b: PolicyMatch) => a.start - b.start || a.end - b.end

/** Sorts what was appended since `from` (one value's matches) by raw offset. */
const sortFrom = (out: Array<PolicyMatch>, from: number) => {
  if (out.length - from > 1) out.splice(from, out.length - from, ...out.slice(from).sort(byStart))
}

/** A simple finder also run over the normalised views; each hit is reported at its raw range, once. */
const normalizedFinder =
  (find: Finder): LeafFinder =>
  (text, target, out) => {
    const from = out.length
    find(text, target, out)
    const seen = new Set<string>()
    for (let i = from; i < out.length; i++) seen.add(`${out[i]!.start}:${out[i]!.end}`)
    const found: Array<PolicyMatch> = []
    for (const view of extraViews(viewsFor(text))) {
      if (out.length > MAX_POLICY_MATCHES) break
      found.length = 0
      find(view.text, target, found)
      for (const hit of found) {
        const { start, end } = view.toRaw(hit.start, hit.end)
        const key = `${start}:${end}`
        if (seen.has(key) || out.length > MAX_POLICY_MATCHES) continue
        seen.add(key)
        out.push({ target, start, end, text: text.slice(start, end) })
      }
    }
    sortFrom(out, from)
  }

// ---- detectors

/** Findings per views (so per text, for as long as its views are memoised) and detection. */
const findingsOf = new WeakMap<TextViews, Map<string, ReadonlyArray<Finding>>>()

/**
 * The detector with its options from the document (the leaf's option fields are the detectors'
 * own names, so the leaf itself is the options object); system_prompt_leak adds the agent's
 * system prompt and canaries at check time.
 */
const detectorFinder = (leaf: DetectorMatch): LeafFinder => {
  const textViews = leaf.normalize === false ? rawOnlyViews : viewsFor
  // Leaves with the same detector and options (e.g. one pack's inbound and outbound policies) share findings.
  const sameDetection = JSON.stringify(leaf, Object.keys(leaf).filter((key) => key !== "target").sort())
  const run = (text: string, agent: PolicyAgent | undefined) => {
    if (leaf.detector === "system_prompt_leak") return detectOnce(text, agent)
    const shared = leaf.normalize === false ? undefined : viewsFor(text)
    if (shared === undefined) return detectOnce(text, agent)
    let known = findingsOf.get(shared)
    if (known === undefined) findingsOf.set(shared, (known = new Map()))
    let findings = known.get(sameDetection)
    if (findings === undefined) known.set(sameDetection, (findings = detectOnce(text, agent)))
    return findings
  }
  const detectOnce = (text: string, agent: PolicyAgent | undefined) => {
    switch (leaf.detector) {
      case "pii":
        return detect("pii", textViews(text), leaf)
      case "secret":
        return detect("secret", textViews(text), leaf)
      case "prompt_injection":
        return detect("prompt_injection", textViews(text), leaf)
      case "url":
        return detect("url", textViews(text), leaf)
      case "system_prompt_leak": {
        const canaries = agent?.canaries ?? []
        const system_prompt = agent?.system_prompt ?? ""
        // Without a profile to compare with there is nothing that could leak.
        if (canaries.length === 0 && system_prompt.trim() === "") return []
        return detect("system_prompt_leak", textViews(text), { ...leaf, system_prompt, canaries })
      }
    }
  }
  return (text, target, out, agent) => {
    if (out.length > MAX_POLICY_MATCHES || text === "") return
    const from = out.length
    for (const finding of run(text, agent)) {
      for (const { start, end } of finding.spans) {
        if (out.length > MAX_POLICY_MATCHES) break
        out.push({
          target,
          start,
          end,
          text: text.slice(start, end),
          detector: finding.detector,
          category: finding.category,
          ...(finding.score === undefined ? {} : { score: finding.score })
        })
      }
    }
    sortFrom(out, from)
  }
}

// ---- targets

const isIndex = (segment: string): boolean => /^(?:0|[1-9][0-9]*)$/.test(segment)
const isFields = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u)
const scalarText = (value: unknown): string | null =>
  typeof value === "string" ? value : typeof value === "number" || typeof value === "boolean" ? String(value) : null

/** Feeds the targeted value(s) of an action to the finder; `params.*` paths are split once here. */
type Search = (action: PolicyAction, out: Array<PolicyMatch>, agent: PolicyAgent | undefined) => void

const makeSearch = (target: string, find: LeafFinder): Search => {
  if (target === "content") {
    return (action, out, agent) => {
      if (action.content !== undefined) find(action.content, target, out, agent)
    }
  }
  if (target === "operation") return (action, out, agent) => find(action.operation, target, out, agent)
  const segments = target.split(".").slice(1)
  return (action, out, agent) => {
    let current: unknown = action.params
    for (const segment of segments) {
      if (Array.isArray(current)) current = isIndex(segment) ? current[Number(segment)] : undefined
      else if (isFields(current)) current = Object.hasOwn(current, segment) ? current[segment] : undefined
      else return
    }
    const scalar = scalarText(current)
    if (scalar !== null) return find(scalar, target, out, agent)
    if (!Array.isArray(current)) return
    current.forEach((item, i) => {
      const text = scalarText(item)
      if (text !== null) find(text, `${target}.${i}`, out, agent)
    })
  }
}

// ---- the tree

/** A compiled leaf: how it searches an action by its target, or one given text. */
export interface CompiledLeaf {
  readonly target: string
  readonly search: Search
  readonly find: LeafFinder
}

/** How each leaf is run for one evaluation: over an action, or over a text being rewritten. */
export type RunLeaf = (leaf: CompiledLeaf) => ReadonlyArray<PolicyMatch>

/** The positive leaves' matches when the match holds (possibly none, e.g. `not`); null when it does not. */
export type Evaluate = (run: RunLeaf) => ReadonlyArray<PolicyMatch> | null

const cap = (out: Array<PolicyMatch>) =>
  out.length > MAX_POLICY_MATCHES + 1 ? out.slice(0, MAX_POLICY_MATCHES + 1) : out

const compileLeaf = (leaf: LeafMatch, path: string): Either.Either<CompiledLeaf, Array<PolicyError>> => {
  const finder: Either.Either<LeafFinder, string> =
    leaf.type === "detector"
      ? Either.right(detectorFinder(leaf))
      : Either.map(makeFinder(leaf), (find) => (leaf.normalize === true ? normalizedFinder(find) : find))
  return Either.match(finder, {
    onLeft: (message) => Either.left([{ path: `${path}.value`, message }]),
    onRight: (find) => Either.right({ target: leaf.target, find, search: makeSearch(leaf.target, find) })
  })
}

/** Compiles a validated match; `leaves` collects its leaves (a single-leaf policy rewrites by its own rule). */
export const compileMatch = (
  spec: MatchSpec,
  path = "match",
  leaves: Array<CompiledLeaf> = []
): Either.Either<Evaluate, Array<PolicyError>> => {
  if (isNot(spec)) {
    return Either.map(
      compileMatch(spec.not, `${path}.not`, leaves),
      (child) => (run) => (child(run) === null ? [] : null)
    )
  }
  if (isAll(spec) || isAny(spec)) {
    const key = isAll(spec) ? "all" : "any"
    const list = isAll(spec) ? spec.all : spec.any
    const compiled = list
      .slice(0, MAX_MATCH_CHILDREN)
      .map((child, i) => compileMatch(child, `${path}.${key}.${i}`, leaves))
    const errors = compiled.flatMap((c) => (Either.isLeft(c) ? c.left : []))
    if (errors.length > 0) return Either.left(errors)
    const children = compiled.flatMap((c) => (Either.isRight(c) ? [c.right] : []))
    if (key === "all") {
      return Either.right((run) => {
        const out: Array<PolicyMatch> = []
        for (const child of children) {
          const found = child(run)
          if (found === null) return null
          out.push(...found)
        }
        return cap(out)
      })
    }
    return Either.right((run) => {
      let matched = false
      const out: Array<PolicyMatch> = []
      for (const child of children) {
        const found = child(run)
        if (found === null) continue
        matched = true
        out.push(...found)
      }
      return matched ? cap(out) : null
    })
  }
  return Either.map(compileLeaf(spec, path), (leaf) => {
    leaves.push(leaf)
    return (run) => {
      const found = run(leaf)
      return found.length === 0 ? null : found
    }
  })
}
