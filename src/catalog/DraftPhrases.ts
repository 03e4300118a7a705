/**
 * The reading half of policy drafting (Drafting.ts): a prompt normalised
 * (politeness, labels and negations folded), phrases split into items,
 * literals and operation names derived from them, and stable ids.
 */
import { Array as Arr, Hash, Option } from "effect"
import type { DecisionEffect, Severity } from "../authorization/Domain.js"
import type { MatchType, PolicyFamily } from "./Domain.js"

// ---- prompt normalisation

/** A drafted policy is one rule; longer text is not one, and the cap bounds the parsing regexes' work. */
export const MAX_PROMPT_LENGTH = 500
/** A literal this long is almost surely a misparse rather than the phrase to match. */
const MAX_VALUE_WORDS = 8

const SEVERITIES: ReadonlyArray<Severity> = ["low", "medium", "high", "critical"]
const SEVERITY_HINT =
  /[\s,(]*\b(?:(?:with|at|as)\s+)?(?:an?\s+)?(low|medium|high|critical)[\s-](?:severity|priority)\b\)?|[\s,(]*\bseverity\s*(?:[:=]|of|is)?\s*(low|medium|high|critical)\b\)?/i

/** Politeness, "policy:" labels, "I want the agent to", and a leading subject + modal ("the agent must"). */
const PREAMBLE = new RegExp(
  [
    String.raw`^(?:please|kindly|ok(?:ay)?|hey|hi|so|also|and|then)\b[\s,:]*`,
    String.raw`^(?:policy|rule|guardrail|guideline)\s*[:-]\s*`,
    String.raw`^(?:i|we)\s+(?:want|would\s+like|'d\s+like|need)\s+(?:you\s+|the\s+(?:agent|assistant|bot|model)\s+)?to\s+`,
    String.raw`^(?:can|could|would|will)\s+you\s+`,
    String.raw`^(?:make\s+sure|ensure)\s+(?:that\s+)?`,
    String.raw`^(?:add|create|write|make|draft|set\s+up)\s+(?:an?\s+)?(?:new\s+)?(?:policy|rule|guardrail)\s*(?:that|which|to|for)?\s+`,
    String.raw`^(?:(?:the|our|my|your|this)\s+)?(?:ai\s+)?(?:agent|assistant|bot|chatbot|model|llm|ai|copilot)s?\s+`,
    String.raw`^(?:you|it|we|they)\s+(?=should|must|shall|will|won|need|have|has|do|can|may|never|ought|always)`,
    String.raw`^(?:should|must|shall|will|may|can|needs?\s+to|ha(?:s|ve)\s+to|ought\s+to|is\s+to|are\s+to|always)(?![\w'])\s*`
  ].join("|"),
  "i"
)
const TRAILING = /(?:[\s,]+(?:please|thanks|thank\s+you|thx)|[\s.!?;:,]+)$/i
/** Every spelling of "do not" becomes "never ", so the patterns below need one form. */
const NEGATION =
  /^(?:never(?:,?\s+ever)?|(?:do|does|must|should|shall|will|may|can)\s+not|don'?t|doesn'?t|mustn'?t|shouldn'?t|shan'?t|won'?t|can'?t|cannot|not|no\s+longer|avoid|refrain\s+from|under\s+no\s+circumstances(?:\s+should)?|(?:is|are)\s+(?:not\s+(?:allowed|permitted)|forbidden|prohibited)\s+(?:to|from))(?![\w'])[\s,]*/i
/** "a rule that blocks ..." leaves a third-person command verb. */
const THIRD_PERSON =
  /^(block|redact|mask|replace|rewrite|swap|escalate|require|forbid|prohibit|disallow|prevent|reject|remove|strip|hide|flag|ban|filter|substitute|scrub|censor|warn|route|transfer|forward)s\b/i

const strip = (text: string, rounds: number): string => {
  const next = text.replace(TRAILING, "").replace(PREAMBLE, "").trim()
  return next === text || rounds === 0 ? next : strip(next, rounds - 1)
}

interface Prompt {
  readonly text: string
  readonly severity: Option.Option<Severity>
}

export const normalize = (prompt: string): Prompt => {
  const plain = prompt
    .normalize("NFKC")
    .replace(/[\u201C\u201D\u201E\u201F\u00AB\u00BB]/g, '"')
    .replace(/[\u2018\u2019\u201A\u201B`]/g, "'") // backticked tool names count as quoted
    .replace(/\s+/g, " ")
  const hint = SEVERITY_HINT.exec(plain)
  const severity = Option.fromNullable(hint?.[1] ?? hint?.[2]).pipe(
    Option.flatMap((s) => Arr.findFirst(SEVERITIES, (known) => known === s.toLowerCase()))
  )
  const text = strip(plain.replace(SEVERITY_HINT, " ").trim(), 8)
    .replace(NEGATION, "never ")
    .replace(THIRD_PERSON, "$1")
    .replace(/^denies\b/i, "deny")
  return { text, severity }
}

// ---- phrases, lists and names

interface Item {
  readonly text: string
  readonly quoted: boolean
}

const QUOTED = /"([^"]+)"|(?<!\w)'([^']+)'(?!\w)/g
const LIST_GLUE = /\b(?:and|or|nor|either|neither|plus)\b|[\s,;/&]/gi
const SEPARATOR = /\s*(?:[,;/&]|\bas\s+well\s+as\b|\b(?:and|or|nor|plus)\b)\s*/i
export const DETERMINER = /^(?:(?:a|an|the|any|all|some|every|each|my|your|our|their|his|her|its|these|those)\s+)+/i

export const toItem = (part: string): Item => {
  const text = part.trim().replace(/^[\s:,-]+|[\s.,;:!?]+$/g, "")
  const whole = /^(?:"([^"]+)"|'([^']+)')$/.exec(text)
  return whole !== null
    ? { text: (whole[1] ?? whole[2] ?? "").trim(), quoted: true }
    : {
        text: text
          .replace(/(?<!\w)'|'(?!\w)|"/g, "")
          .replace(/^(?:either|neither)\s+/i, "")
          .trim(),
        quoted: false
      }
}

/** "X, Y or Z" as items. Quoted items stay whole, so a quoted "terms and conditions" is one item. */
export const splitItems = (phrase: string): ReadonlyArray<Item> => {
  const quoted = Array.from(phrase.matchAll(QUOTED), (m) => (m[1] ?? m[2] ?? "").trim())
  const onlyQuotes = quoted.length > 0 && phrase.replace(QUOTED, "").replace(LIST_GLUE, "") === ""
  const items = onlyQuotes ? quoted.map((text) => ({ text, quoted: true })) : phrase.split(SEPARATOR).map(toItem)
  return items.filter((item) => /[\p{L}\p{N}]/u.test(item.text))
}

/**
 * Drops a plain plural "s" from the last word ("refunds" -> "refund"). Literals match as
 * substrings, so the singular still matches the plural; forms whose singular is not a prefix
 * ("policies", "addresses") are kept as written.
 */
const singularSubstring = (phrase: string): string =>
  phrase.replace(/([a-z]{3,})s$/, (word, stem: string) => (/(?:ie|[sxz]e|[cs]he|s|u|i|ic)$/.test(stem) ? word : stem))

/** The literal for an unquoted phrase: lower case, no leading article, singular last word. */
export const literalOf = (item: Item): string => {
  const lower = item.text.toLowerCase()
  return item.quoted ? lower : singularSubstring(lower.replace(DETERMINER, "").trim())
}

/** Qualifiers that say where, not what: "X in replies", "X to customers", "X at all". */
export const CONTENT_TAIL =
  /\s+(?:(?:in|from|to|with|for)\s+(?:(?:all|any|the|our)\s+)?(?:customers?|users?|messages?|replies|responses?|answers?|outputs?|chats?|conversations?|anyone|people)|at\s+all|ever|anymore|whatsoever)$/i

export const contentValues = (phrase: string): Option.Option<ReadonlyArray<string>> => {
  const values = Arr.dedupe(splitItems(phrase.replace(CONTENT_TAIL, "")).map(literalOf)).filter((v) => v !== "")
  const sensible = values.length > 0 && values.every((v) => v.split(" ").length <= MAX_VALUE_WORDS)
  return sensible ? Option.some(values) : Option.none()
}

/** `"a"`, `"a" or "b"`, `"a", "b" or "c"` */
export const quotedList = (values: ReadonlyArray<string>, last = "or"): string => {
  const quoted = values.map((v) => `"${v}"`)
  return quoted.length === 1 ? quoted[0]! : `${quoted.slice(0, -1).join(", ")} ${last} ${quoted[quoted.length - 1]}`
}

const slug = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")

/** `[a-z0-9][a-z0-9_.-]{0,127}`: prefix + slug of the key parts; a hash when they have no ASCII. */
export const makeId = (prefix: string, key: string, suffix = ""): string => {
  const keySlug = slug(key) || (Hash.string(key) >>> 0).toString(36)
  return [prefix, keySlug, suffix]
    .filter((part) => part !== "")
    .join("-")
    .slice(0, 128)
    .replace(/[-_.]+$/, "")
}

export const sentence = (text: string): string => `${text.charAt(0).toUpperCase()}${text.slice(1)}.`

export const groups = (re: RegExp, text: string): Option.Option<Record<string, string | undefined>> =>
  Option.fromNullable(re.exec(text)?.groups)

export const firstGroups = (res: ReadonlyArray<RegExp>, text: string) => Arr.findFirst(res, (re) => groups(re, text))

export const re = (...parts: ReadonlyArray<string>): RegExp => new RegExp(parts.join(""), "i")

// ---- operation names ("issuing refunds" -> "issue_refund")

const words = (list: string): ReadonlySet<string> => new Set(list.split(" "))

const IDENTIFIER = /\b[a-z][a-z0-9]*(?:[_.:-][a-z0-9]+)+\b|\b[a-z]+(?:[A-Z][a-z0-9]*)+\b/
const LEADING_WORDS = words(
  "the agent assistant bot ai it we you they i model can may will should could would must tries try attempts attempt wants want is are to"
)
const STOP_WORDS = words(
  "to from over above under below if when whenever unless that which who without after before while on in into with via by at than more less greater exceeding worth of for and or but during because larger bigger higher lower within through using"
)
const ARTICLES = words("a an the any all some every each this these those their his her its our your my one")

/** Stems that take back a silent "e" ("issu" -> "issue", "delet" -> "delete"). A heuristic: names are reviewed. */
const SILENT_E = /(?:[cvzu]|[^aeiou][aeiou][ks]|[aeiou]s|(?<!i)ng|[rd]g|at|ut|let|writ|[^aeiou][aiou]r|[^aeioul]l|ul)$/

/** Gerund or third person to the base form: "issuing" -> "issue", "deletes" -> "delete". */
const baseVerb = (word: string): string => {
  if (word.endsWith("ying")) return `${word.slice(0, -4)}y`
  if (word.endsWith("ing") && word.length >= 5) {
    const stem = word.slice(0, -3)
    if (/([b-df-hj-np-tv-z])\1$/.test(stem) && !/(?:ll|ss|ff|zz)$/.test(stem)) return stem.slice(0, -1)
    if (/ell$/.test(stem) && stem.length >= 6) return stem.slice(0, -1) // cancelling
    return SILENT_E.test(stem) ? `${stem}e` : stem
  }
  return singularNoun(word)
}

const singularNoun = (word: string): string =>
  /[^aeiou]ies$/.test(word)
    ? `${word.slice(0, -3)}y`
    : /(?:ss|sh|ch|x|z)es$/.test(word)
      ? word.slice(0, -2)
      : word.length > 3 && word.endsWith("s") && !/(?:ss|us|is)$/.test(word)
        ? word.slice(0, -1)
        : word

export const snake = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9_.:-]+/g, "_")
    .replace(/^_+|_+$/g, "")

const TOOL_REFERENCE =
  /^(?:call(?:ing)?|us(?:e|ing)|invok(?:e|ing)|run(?:ning)?|execut(?:e|ing))\s+(?:the\s+)?(.+?)\s+(?:tool|function)s?\b/i

/** An operation name from "issuing refunds", "the agent deletes an account", "calling the X tool", "`wire_transfer`". */
export const operationName = (item: Item): Option.Option<string> => {
  if (item.quoted) return Option.some(snake(item.text)).pipe(Option.filter((s) => s !== ""))
  const identifier = IDENTIFIER.exec(item.text)
  if (identifier !== null) return Option.some(identifier[0].toLowerCase())
  const tool = TOOL_REFERENCE.exec(item.text)
  if (tool !== null) return Option.some(snake(tool[1]!)).pipe(Option.filter((s) => s !== ""))
  const words =
    item.text
      .toLowerCase()
      .replace(/'s\b/g, "")
      .match(/[a-z0-9]+/g) ?? []
  const rest = Arr.dropWhile(words, (w) => LEADING_WORDS.has(w))
  const core = Arr.takeWhile(rest, (w) => !STOP_WORDS.has(w))
    .filter((w) => !ARTICLES.has(w))
    .slice(0, 4)
  if (!Arr.isNonEmptyReadonlyArray(core)) return Option.none()
  const [head, ...tail] = core
  // The first word is a verb when it is a gerund or follows a subject ("the agent issues ...").
  const verb = head.endsWith("ing") || (rest.length < words.length && tail.length > 0) ? baseVerb(head) : head
  const parts =
    tail.length === 0 ? [singularNoun(verb)] : [verb, ...tail.slice(0, -1), singularNoun(tail[tail.length - 1]!)]
  return Option.some(parts.join("_"))
}

// ---- drafts

export type DraftTarget = "content" | "operation" | `params.${string}`

export interface Draft {
  readonly id: string
  readonly description: string
  readonly action: DecisionEffect
  readonly severity: Severity
  readonly family: typeof PolicyFamily.Type
  readonly match_type: typeof MatchType.Type
  /** The literal or regex; for `any_of`, the values joined with ", " (readable in PolicyDraft). */
  readonly match_value: string
  /** Present only for `any_of`. */
  readonly match_values?: ReadonlyArray<string>
  readonly target: DraftTarget
  readonly rewrite: string | null
}

type Base = Omit<Draft, "match_type" | "match_value" | "match_values">

/** One value -> literal; several -> any_of (the PolicyDraft string joins them). */
export const withValues = (base: Base, values: ReadonlyArray<string>): Draft =>
  values.length === 1
    ? { ...base, match_type: "literal", match_value: values[0]! }
    : { ...base, match_type: "any_of", match_value: values.join(", "), match_values: values }

type Rule = Pick<Draft, "id" | "description" | "action" | "severity"> &
  Partial<Pick<Draft, "family" | "target" | "rewrite">>

/** A content rule unless the fields say otherwise. */
export const rule = (values: ReadonlyArray<string>, fields: Rule): Draft =>
  withValues({ family: "content", target: "content", rewrite: null, ...fields }, values)
