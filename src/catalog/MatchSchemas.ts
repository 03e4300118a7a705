/**
 * The `match` of a policy document: a simple match (literal, regex, any_of), a built-in detector
 * (src/detection), or a composite of matches (all, any, not). Every string, list and number is
 * bounded here; `PolicyMatchValidation.ts` picks the member a node means, so errors name one path.
 */
import { Schema } from "effect"
import { PII_CATEGORIES } from "../detection/index.js"
import { boundedArray, Identifier, LongText } from "../platform/Schemas.js"

/** Composites nest at most this deep (a leaf inside four composites), and list at most this many children. */
export const MAX_MATCH_DEPTH = 4
export const MAX_MATCH_CHILDREN = 16

export const SimpleMatchType = Schema.Literal("literal", "regex", "any_of")
/** What a leaf's `type` may be. */
export const LeafType = Schema.Literal("literal", "regex", "any_of", "detector")
export const DetectorName = Schema.Literal("pii", "secret", "prompt_injection", "system_prompt_leak", "url")

const Target = Identifier.annotations({
  description: "content | operation | params.<path> (dot-separated keys and array indexes)",
  examples: ["content", "operation", "params.recipient.email", "params.items.0"]
})

const nonEmptyList = <S extends Schema.Schema.Any>(item: S, max: number) =>
  boundedArray(item, max).pipe(
    Schema.minItems<Schema.filter<Schema.Array$<S>>>(1, { message: () => "must list at least one item" })
  )

const between = (min: number, max: number, exclusiveMin = false) =>
  Schema.Number.pipe(
    exclusiveMin ? Schema.greaterThan(min) : Schema.greaterThanOrEqualTo(min),
    Schema.lessThanOrEqualTo(max),
    Schema.annotations({
      message: () => `must be a number ${exclusiveMin ? `above ${min} and at most` : `from ${min} to`} ${max}`
    })
  )

const intBetween = (min: number, max: number) =>
  Schema.Int.pipe(
    Schema.between(min, max),
    Schema.annotations({ message: () => `must be a whole number from ${min} to ${max}` })
  )

export const SimpleMatch = Schema.Struct({
  type: SimpleMatchType.annotations({ description: "literal | regex | any_of (a list of literals)" }),
  value: Schema.Union(LongText, boundedArray(LongText)).annotations({
    description: "A non-empty string (literal, regex) or a non-empty list of non-empty strings (any_of)"
  }),
  target: Target,
  case_sensitive: Schema.optional(Schema.Boolean.annotations({ description: "Default false" })),
  normalize: Schema.optional(
    Schema.Boolean.annotations({
      description:
        "Default false. Also search the normalised views (folded, deobfuscated, rot13, decoded); hits map back to raw offsets"
    })
  )
}).annotations({ identifier: "SimpleMatch" })

/** Fields every detector match has. */
const detectorFields = {
  type: Schema.Literal("detector"),
  target: Target,
  normalize: Schema.optional(Schema.Boolean.annotations({ description: "Default true; false scans only the raw text" }))
}

/** A domain in a url allow or deny list (`example.com` also covers its subdomains). */
const Domain = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(253, { message: () => "must be at most 253 characters" }),
  Schema.pattern(/^(?:\*\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*$/, {
    message: () => "must be a domain such as example.com"
  })
)
const Domains = nonEmptyList(Domain, 500)
/** Detector options are exact optionals (absent, never undefined): the decoded leaf is the detector's options object. */
const exact = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })
const Threshold = between(0, 1, true)

export const PiiMatch = Schema.Struct({
  ...detectorFields,
  detector: Schema.Literal("pii"),
  categories: exact(
    nonEmptyList(Schema.Literal(...PII_CATEGORIES), PII_CATEGORIES.length).annotations({
      description: "Only these categories; default all"
    })
  )
}).annotations({ identifier: "PiiMatch" })

export const SecretMatch = Schema.Struct({
  ...detectorFields,
  detector: Schema.Literal("secret"),
  min_entropy: exact(
    between(0, 6).annotations({
      description: "Bits per character a value assigned to a key-like name needs; default 3.0"
    })
  )
}).annotations({ identifier: "SecretMatch" })

export const PromptInjectionMatch = Schema.Struct({
  ...detectorFields,
  detector: Schema.Literal("prompt_injection"),
  threshold: exact(Threshold.annotations({ description: "Score (0..1] that reports; default 0.5" }))
}).annotations({ identifier: "PromptInjectionMatch" })

export const SystemPromptLeakMatch = Schema.Struct({
  ...detectorFields,
  detector: Schema.Literal("system_prompt_leak"),
  threshold: exact(
    Threshold.annotations({ description: "Share (0..1] of the system prompt's n-grams that is a leak; default 0.3" })
  ),
  min_run_words: exact(
    intBetween(3, 200).annotations({ description: "A verbatim run of this many words is a leak; default 10" })
  ),
  ngram: exact(intBetween(2, 8).annotations({ description: "Words per n-gram; default 4" }))
}).annotations({
  identifier: "SystemPromptLeakMatch",
  description: "The system prompt and canaries come from the agent profile of the event's agent"
})

export const UrlMatch = Schema.Struct({
  ...detectorFields,
  detector: Schema.Literal("url"),
  allow: exact(Domains.annotations({ description: "When given, every other domain matches" })),
  deny: exact(Domains.annotations({ description: "These domains (and subdomains) always match" })),
  images_only: exact(
    Schema.Boolean.annotations({
      description:
        "Only URLs a renderer fetches by itself (markdown images, HTML <img>), the channel a prompt-injected answer exfiltrates through; default false"
    })
  )
}).annotations({ identifier: "UrlMatch" })

/** A detector leaf's common fields, to report an unknown `detector` name once. */
export const DetectorLeaf = Schema.Struct({ ...detectorFields, detector: DetectorName })

/** One member per detector, by its `detector` name. */
export const DetectorMatches = {
  pii: PiiMatch,
  secret: SecretMatch,
  prompt_injection: PromptInjectionMatch,
  system_prompt_leak: SystemPromptLeakMatch,
  url: UrlMatch
} as const

export type SimpleMatch = typeof SimpleMatch.Type
export type DetectorMatch = {
  [K in keyof typeof DetectorMatches]: (typeof DetectorMatches)[K]["Type"]
}[keyof typeof DetectorMatches]
export type LeafMatch = SimpleMatch | DetectorMatch
export interface AllMatch {
  readonly all: ReadonlyArray<MatchSpec>
}
export interface AnyMatch {
  readonly any: ReadonlyArray<MatchSpec>
}
export interface NotMatch {
  readonly not: MatchSpec
}
export type MatchSpec = LeafMatch | AllMatch | AnyMatch | NotMatch

/** The children of all/any, bounded (validation checks the list with `Schema.Unknown` items, then each child). */
export const childList = <S extends Schema.Schema.Any>(item: S) => nonEmptyList(item, MAX_MATCH_CHILDREN)

const Child = Schema.suspend((): Schema.Schema<MatchSpec> => MatchSpec)
const Children = childList(Child)

export const AllMatch = Schema.Struct({
  all: Children.annotations({ description: "Matches when every listed match does" })
}).annotations({ identifier: "AllMatch" })
export const AnyMatch = Schema.Struct({
  any: Children.annotations({ description: "Matches when at least one listed match does" })
}).annotations({ identifier: "AnyMatch" })
export const NotMatch = Schema.Struct({
  not: Child.annotations({ description: "Matches when this match does not" })
}).annotations({ identifier: "NotMatch" })

export const MatchSpec: Schema.Schema<MatchSpec> = Schema.Union(
  SimpleMatch,
  PiiMatch,
  SecretMatch,
  PromptInjectionMatch,
  SystemPromptLeakMatch,
  UrlMatch,
  AllMatch,
  AnyMatch,
  NotMatch
).annotations({
  identifier: "PolicyMatch",
  description: `A simple match, a detector, or all/any/not of matches (at most ${MAX_MATCH_DEPTH} composites deep, ${MAX_MATCH_CHILDREN} children each)`
})

export const isAll = (m: MatchSpec): m is AllMatch => "all" in m
export const isAny = (m: MatchSpec): m is AnyMatch => "any" in m
export const isNot = (m: MatchSpec): m is NotMatch => "not" in m
export const isLeaf = (m: MatchSpec): m is LeafMatch => "type" in m
