/**
 * Deterministic natural-language policy drafting (no model) for `POST /v1/policies/draft`.
 * A few phrasing patterns each recognise one policy shape: never-promise, block-mention,
 * redaction, rewrite, approval, escalation/flag and tool block. Anything else is `Option.none()`,
 * which the endpoint answers with a 422 listing DRAFT_EXAMPLES. A draft is a proposal: the YAML it
 * renders starts disabled, so a person reviews it before it takes effect.
 */
import { Array as Arr, Hash, Option } from "effect"
import type { Schema } from "effect"
import { stringify } from "yaml"
import type { DecisionEffect, Severity } from "../authorization/Domain.js"
import type { MatchType, PolicyDocument, PolicyFamily } from "./Domain.js"

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

/** Phrasings the drafter understands; the 422 for an unrecognised prompt shows them. */
export const DRAFT_EXAMPLES: ReadonlyArray<string> = [
  "Never promise a refund",
  "Block messages that mention Competitor X, Competitor Y or Competitor Z",
  "Redact credit card numbers (also: emails, phone numbers, SSNs, API keys)",
  "Replace 'guarantee' with 'aim to'",
  "Require approval before issuing refunds",
  "Escalate when the customer mentions a lawyer",
  "Never call the delete_user tool",
  "Flag when the user mentions cancellation"
]

// ---- prompt normalisation

/** A drafted policy is one rule; longer text is not one, and the cap bounds the parsing regexes' work. */
const MAX_PROMPT_LENGTH = 500
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

const normalize = (prompt: string): Prompt => {
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
const DETERMINER = /^(?:(?:a|an|the|any|all|some|every|each|my|your|our|their|his|her|its|these|those)\s+)+/i

const toItem = (part: string): Item => {
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
const splitItems = (phrase: string): ReadonlyArray<Item> => {
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
const literalOf = (item: Item): string => {
  const lower = item.text.toLowerCase()
  return item.quoted ? lower : singularSubstring(lower.replace(DETERMINER, "").trim())
}

/** Qualifiers that say where, not what: "X in replies", "X to customers", "X at all". */
const CONTENT_TAIL =
  /\s+(?:(?:in|from|to|with|for)\s+(?:(?:all|any|the|our)\s+)?(?:customers?|users?|messages?|replies|responses?|answers?|outputs?|chats?|conversations?|anyone|people)|at\s+all|ever|anymore|whatsoever)$/i

const contentValues = (phrase: string): Option.Option<ReadonlyArray<string>> => {
  const values = Arr.dedupe(splitItems(phrase.replace(CONTENT_TAIL, "")).map(literalOf)).filter((v) => v !== "")
  const sensible = values.length > 0 && values.every((v) => v.split(" ").length <= MAX_VALUE_WORDS)
  return sensible ? Option.some(values) : Option.none()
}

/** `"a"`, `"a" or "b"`, `"a", "b" or "c"` */
const quotedList = (values: ReadonlyArray<string>, last = "or"): string => {
  const quoted = values.map((v) => `"${v}"`)
  return quoted.length === 1 ? quoted[0]! : `${quoted.slice(0, -1).join(", ")} ${last} ${quoted[quoted.length - 1]}`
}

const slug = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")

/** `[a-z0-9][a-z0-9_.-]{0,127}`: prefix + slug of the key parts; a hash when they have no ASCII. */
const makeId = (prefix: string, key: string, suffix = ""): string => {
  const keySlug = slug(key) || (Hash.string(key) >>> 0).toString(36)
  return [prefix, keySlug, suffix]
    .filter((part) => part !== "")
    .join("-")
    .slice(0, 128)
    .replace(/[-_.]+$/, "")
}

const sentence = (text: string): string => `${text.charAt(0).toUpperCase()}${text.slice(1)}.`

type Base = Omit<Draft, "match_type" | "match_value" | "match_values">

/** One value -> literal; several -> any_of (the PolicyDraft string joins them). */
const withValues = (base: Base, values: ReadonlyArray<string>): Draft =>
  values.length === 1
    ? { ...base, match_type: "literal", match_value: values[0]! }
    : { ...base, match_type: "any_of", match_value: values.join(", "), match_values: values }

type Rule = Pick<Draft, "id" | "description" | "action" | "severity"> &
  Partial<Pick<Draft, "family" | "target" | "rewrite">>

/** A content rule unless the fields say otherwise. */
const rule = (values: ReadonlyArray<string>, fields: Rule): Draft =>
  withValues({ family: "content", target: "content", rewrite: null, ...fields }, values)

const groups = (re: RegExp, text: string): Option.Option<Record<string, string | undefined>> =>
  Option.fromNullable(re.exec(text)?.groups)

const firstGroups = (res: ReadonlyArray<RegExp>, text: string) => Arr.findFirst(res, (re) => groups(re, text))

const re = (...parts: ReadonlyArray<string>): RegExp => new RegExp(parts.join(""), "i")

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

const snake = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9_.:-]+/g, "_")
    .replace(/^_+|_+$/g, "")

const TOOL_REFERENCE =
  /^(?:call(?:ing)?|us(?:e|ing)|invok(?:e|ing)|run(?:ning)?|execut(?:e|ing))\s+(?:the\s+)?(.+?)\s+(?:tool|function)s?\b/i

/** An operation name from "issuing refunds", "the agent deletes an account", "calling the X tool", "`wire_transfer`". */
const operationName = (item: Item): Option.Option<string> => {
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

// ---- PII redaction

interface Pii {
  readonly key: string
  readonly noun: string
  readonly words: RegExp
  /** Bounded quantifiers only, no lookaround: passes the policy regex safety check and runs linearly. */
  readonly pattern: string
  readonly placeholder: string
}

const PII: ReadonlyArray<Pii> = [
  {
    key: "credit-card",
    noun: "credit card numbers",
    words: /\b(?:(?:credit|debit|payment|bank)\s+cards?|card\s+(?:numbers?|details|nos?)|cc\s+numbers?|pans?)\b/i,
    // 4-6-4/5 (Amex, Diners) or 4-4-4-1..4 digit groups, optionally space- or dash-separated.
    pattern: String.raw`\b(?:\d{4}[ -]?\d{6}[ -]?\d{4,5}|\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,4})\b`,
    placeholder: "[CARD]"
  },
  {
    key: "email",
    noun: "email addresses",
    words: /\be-?mails?(?:\s+address(?:es)?)?\b/i,
    pattern: String.raw`[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,190}\.[A-Za-z]{2,24}`,
    placeholder: "[EMAIL]"
  },
  {
    key: "phone",
    noun: "phone numbers",
    words: /\b(?:(?:tele)?phone(?:\s+numbers?|s)?|(?:mobile|cell)(?:\s+phone)?\s+numbers?)\b/i,
    // Optional +country code, then 3-3-4 digits (NANP style, area code optionally in parentheses).
    pattern: String.raw`(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)|\b\d{3})[ .-]?\d{3}[ .-]?\d{4}\b`,
    placeholder: "[PHONE]"
  },
  {
    key: "ssn",
    noun: "social security numbers",
    words: /\b(?:ssns?|social\s+security(?:\s+numbers?)?)\b/i,
    pattern: String.raw`\b\d{3}[- ]\d{2}[- ]\d{4}\b`,
    placeholder: "[SSN]"
  },
  {
    key: "api-key",
    noun: "API keys",
    words: /\b(?:api[\s_-]?keys?|secret\s+keys?|(?:access|api|auth|bearer)\s+tokens?|credentials?)\b/i,
    // sk-/pk-/rk- style secrets, AWS access key ids, GitHub and Slack tokens.
    pattern: String.raw`\b(?:sk|pk|rk)[-_][A-Za-z0-9_-]{16,128}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{36}\b|\bxox[abpr]-[A-Za-z0-9-]{10,100}`,
    placeholder: "[API_KEY]"
  }
]

const piiIn = (phrase: string): ReadonlyArray<Pii> => PII.filter((pii) => pii.words.test(phrase))

/** One regex for the PII kinds named; several kinds share "[REDACTED]" unless a replacement is given. */
const redaction = (kinds: Arr.NonEmptyReadonlyArray<Pii>, replacement: Option.Option<string>): Draft => {
  const single = kinds.length === 1
  const nouns = kinds.map((k) => k.noun)
  const listed = single ? nouns[0] : `${nouns.slice(0, -1).join(", ")} and ${nouns[nouns.length - 1]}`
  return {
    id: makeId("redact", kinds.map((k) => k.key).join("-")),
    description: sentence(`redact ${listed}`),
    action: "rewrite",
    severity: "high",
    family: "content",
    match_type: "regex",
    match_value: single ? kinds[0].pattern : kinds.map((k) => `(?:${k.pattern})`).join("|"),
    target: "content",
    rewrite: Option.getOrElse(replacement, () => (single ? kinds[0].placeholder : "[REDACTED]"))
  }
}

const REDACT_VERB = re(
  String.raw`^(?:redact|mask|remove|strip(?:\s+out)?|scrub|hide|censor|obfuscate|anonymi[sz]e|saniti[sz]e|blank\s+out|black\s+out|filter\s+out|cut\s+out)(?:s|es)?\s+(?<x>.+)$`
)
const NEVER_REVEAL = re(
  String.raw`^never\s+(?:reveal|disclose|share|leak|expose|output|print|show|display|include|repeat|echo|divulge|give\s+out|read\s+out)(?:s|es|ing)?\s+(?<x>.+)$`
)

const redactionDraft = (text: string): Option.Option<Draft> =>
  Option.orElse(
    groups(REDACT_VERB, text).pipe(
      Option.flatMap(({ x = "" }) => {
        const kinds = piiIn(x)
        if (Arr.isNonEmptyReadonlyArray(kinds)) return Option.some(redaction(kinds, Option.none()))
        // Anything else must be quoted: "redact 'Project Phoenix'" (an unquoted object is too vague).
        const items = splitItems(x)
        if (items.length === 0 || !items.every((item) => item.quoted)) return Option.none()
        const values = Arr.dedupe(items.map(literalOf))
        return Option.some(
          rule(values, {
            id: makeId("redact", values.join("-")),
            description: sentence(`redact ${quotedList(values, "and")}`),
            action: "rewrite",
            severity: "high",
            rewrite: "[REDACTED]"
          })
        )
      })
    ),
    // "never share credit card numbers" is a redaction too; other objects are content denials below.
    () =>
      groups(NEVER_REVEAL, text).pipe(
        Option.flatMap(({ x = "" }) => Option.liftPredicate(piiIn(x), Arr.isNonEmptyReadonlyArray)),
        Option.map((kinds) => redaction(kinds, Option.none()))
      )
  )

// ---- rewrite: "replace X with Y"

const REPLACE = re(
  String.raw`^(?<verb>replace|rewrite|swap|substitute|change)\s+(?:(?:all|any|every|each)\s+)?(?:(?:mentions?|occurrences?|instances?|uses?)\s+of\s+)?`,
  String.raw`(?:the\s+(?:words?|phrases?|terms?|strings?)\s+)?(?<x>"[^"]+"|'[^']+'|.+?)\s+(?:with|by|as|for|into|to)\s+(?<y>.+)$`
)
const REPLACEMENT_TAIL =
  /\s+(?:in|for)\s+(?:(?:all|any|the)\s+)?(?:messages?|replies|responses?|answers?|outputs?|chats?|conversations?)$/i

const replaceDraft = (text: string): Option.Option<Draft> =>
  groups(REPLACE, text).pipe(
    Option.flatMap(({ verb = "", x = "", y = "" }) => {
      const replacement = toItem(
        y.replace(REPLACEMENT_TAIL, "").replace(/^the\s+(?:words?|phrases?|terms?)\s+/i, "")
      ).text
      const items = splitItems(x)
      // "change" is too general ("change the tone to formal") unless the phrase is quoted.
      if (replacement === "" || items.length === 0 || (/^change$/i.test(verb) && !items.every((i) => i.quoted))) {
        return Option.none()
      }
      const kinds = items.every((i) => !i.quoted) ? piiIn(x) : []
      if (Arr.isNonEmptyReadonlyArray(kinds)) return Option.some(redaction(kinds, Option.some(replacement)))
      // The exact wording (lower case, no singular): a rewrite replaces precisely what was named.
      const values = Arr.dedupe(items.map((i) => (i.quoted ? i.text : i.text.replace(DETERMINER, "")).toLowerCase()))
      return Option.some(
        rule(values, {
          id: makeId("rewrite", values.join("-")),
          description: sentence(`replace ${quotedList(values)} with "${replacement}"`),
          action: "rewrite",
          severity: "low", // a wording change, not a safety block
          rewrite: replacement
        })
      )
    })
  )

// ---- approval: "require approval before issuing refunds"

const APPROVER = String.raw`(?:(?:explicit|human|manual|manager(?:'s)?|supervisor(?:'s)?|admin(?:'s)?|user(?:'s)?|customer(?:'s)?|prior|written|an?|the|some)\s+){0,3}`
const APPROVAL = String.raw`(?:approval|sign[- ]?off|confirmation|authori[sz]ation|permission|review|go-ahead|ok)`
const APPROVAL_PATTERNS: ReadonlyArray<RegExp> = [
  re(
    String.raw`^(?:require|need|get|ask\s+for|request|obtain|wait\s+for|seek|(?:must|should)\s+(?:get|have|obtain)|have)s?\s+`,
    APPROVER,
    APPROVAL,
    String.raw`\s+(?:(?:is\s+)?required\s+)?(?:before|prior\s+to|ahead\s+of|for|to|when|on)\s+(?<op>.+)$`
  ),
  re(
    "^",
    APPROVER,
    APPROVAL,
    String.raw`\s+(?:is\s+|must\s+be\s+|should\s+be\s+)?(?:required|needed|mandatory)\s+(?:before|prior\s+to|for|to|when|on)\s+(?<op>.+)$`
  ),
  re(
    String.raw`^(?:require|need|get|ask|have)s?\s+(?:an?\s+)?(?:human|person|manager|supervisor|admin|someone|reviewer|operator)\s+`,
    String.raw`to\s+(?:approve|sign\s+off\s+on|confirm|authori[sz]e|review|ok)\s+(?<op>.+)$`
  ),
  re(
    String.raw`^(?<op>.+?)\s+(?:requires?|needs?|(?:must|should)\s+(?:have|get|be))\s+`,
    APPROVER,
    String.raw`(?:approval|approved|sign[- ]?off|signed\s+off|confirmation|confirmed|authori[sz]ation|authori[sz]ed|review|reviewed)(?:\s+(?:by|from)\s+.+)?$`
  ),
  re(
    String.raw`^never\s+(?<op>.+?)\s+without\s+(?:(?:asking|getting|obtaining|first\s+getting)\s+(?:for\s+)?)?`,
    APPROVER,
    String.raw`(?:approval|sign[- ]?off|confirmation|authori[sz]ation|permission|review|an?\s+human|human\s+review)(?:\s+(?:from|by)\s+.+)?$`
  )
]

const approvalDraft = (text: string): Option.Option<Draft> =>
  firstGroups(APPROVAL_PATTERNS, text).pipe(
    Option.flatMap(({ op = "" }) => Option.all(splitItems(op).map(operationName))),
    Option.map(Arr.dedupe),
    Option.filter(Arr.isNonEmptyReadonlyArray),
    Option.map((ops) =>
      rule(ops, {
        id: makeId("approval", ops.join("-")),
        description: sentence(`require human approval before running ${quotedList(ops)}`),
        action: "defer",
        severity: "high",
        family: "approval",
        target: "operation"
      })
    )
  )

// ---- escalation and flagging: "escalate when the customer mentions a lawyer"

const HAND_OFF = String.raw`(?<verb>escalate|hand\s+(?:(?:it|this|them|the\s+(?:conversation|chat|case|ticket))\s+)?(?:off|over)|handoff|transfer|route|defer|forward|pass\s+(?:it\s+)?(?:on|over)|flag|warn|alert|notify)`
const SAYS = String.raw`(?:mention(?:s|ed|ing)?|says?|said|saying|brings?\s+up|talks?\s+about|asks?\s+(?:about|for)|threatens?(?:\s+with)?|uses?\s+the\s+(?:words?|phrases?|terms?)|writes?|types?|raises?|requests?|demands?|contains?|includes?|references?|refers?\s+to|discuss(?:es)?)`
const WHEN = String.raw`(?:when(?:ever)?|if|once|as\s+soon\s+as|in\s+case)`
const ESCALATION_PATTERNS: ReadonlyArray<RegExp> = [
  re("^", HAND_OFF, String.raw`\b.*?\b`, WHEN, String.raw`\s+(?:[\w']+\s+){0,3}?`, SAYS, String.raw`\s*:?\s+(?<x>.+)$`),
  re(
    "^",
    HAND_OFF,
    String.raw`\b.*?\b`,
    WHEN,
    String.raw`\s+(?<x>.+?)\s+(?:is|are|gets?)\s+(?:mentioned|brought\s+up|raised)$`
  ),
  re(
    "^",
    HAND_OFF,
    String.raw`\s+(?:(?:all|any)\s+)?(?:(?:messages?|conversations?|chats?|tickets?|requests?|replies|responses?|cases?|threads?)\s+)?`,
    String.raw`(?:(?:that|which)\s+)?(?:on\s+mentions?\s+of|mention(?:s|ing)?|contain(?:s|ing)?|about|involving|regarding|with|referencing)\s+(?<x>.+)$`
  ),
  re(
    "^",
    WHEN,
    String.raw`\s+(?:[\w']+\s+){0,3}?`,
    SAYS,
    String.raw`\s+(?<x>[^,]+?)\s*,\s*(?:then\s+)?`,
    HAND_OFF,
    String.raw`\b`
  )
]

const escalationDraft = (text: string): Option.Option<Draft> =>
  firstGroups(ESCALATION_PATTERNS, text).pipe(
    Option.flatMap(({ verb = "", x = "" }) =>
      contentValues(x.replace(/^to\s+/i, "")).pipe(
        Option.map((values) => {
          // Flag/warn/alert/notify ask for a look, not a hand-off: low severity.
          const flag = /^(?:flag|warn|alert|notify)/i.test(verb)
          return rule(values, {
            id: makeId(flag ? "flag" : "escalate", values.join("-")),
            description: sentence(
              `${flag ? "flag for human review" : "escalate to a human"} when a message mentions ${quotedList(values)}`
            ),
            action: "defer",
            severity: flag ? "low" : "high"
          })
        })
      )
    )
  )

// ---- content denial: "block messages that mention X", "never promise a refund"

const BLOCK = String.raw`(?:block|deny|reject|forbid|prohibit|disallow|prevent|ban|filter(?:\s+out)?|stop|refuse|suppress)`
const CARRIER = String.raw`(?:messages?|replies|reply|responses?|answers?|outputs?|texts?|content|emails?|posts?|comments?|conversations?|completions?)`
const MENTION_PATTERNS: ReadonlyArray<RegExp> = [
  re(
    "^",
    BLOCK,
    String.raw`\s+(?:the\s+(?:agent|assistant|bot)\s+from\s+)?(?:(?:all|any|every)\s+)?(?:`,
    CARRIER,
    String.raw`\s+)?(?:(?:that|which)\s+)?(?:mentions?\s+of|references?\s+to|talk(?:ing)?\s+(?:of|about)|discussions?\s+(?:of|about)|`,
    SAYS,
    String.raw`|mentioning|containing|including|referencing|discussing|about|regarding|on|with|of)\s*:?\s+(?<x>.+)$`
  ),
  re("^", BLOCK, String.raw`\s+(?<x>.+?)\s+(?:mentions|references|talk)$`),
  re(String.raw`^no\s+(?:mentions?|talk|discussion|references?)\s+(?:of|about|to)\s+(?<x>.+)$`),
  re(
    String.raw`^never\s+(?:mention(?:s|ing)?|discuss(?:es|ing)?|talk(?:s|ing)?\s+about|speak(?:s|ing)?\s+(?:about|of)|bring(?:s|ing)?\s+up|`,
    String.raw`refer(?:s|ring)?\s+to|reference|recommend(?:s|ing)?|endorse|suggest|comment(?:s|ing)?\s+on|say(?:s|ing)?|`,
    String.raw`us(?:e|es|ing)\s+the\s+(?:words?|phrases?|terms?))\s*:?\s+(?<x>.+)$`
  )
]

const mentionDraft = (text: string): Option.Option<Draft> =>
  firstGroups(MENTION_PATTERNS, text).pipe(
    Option.flatMap(({ x = "" }) => contentValues(x)),
    Option.map((values) =>
      rule(values, {
        id: makeId("block-mention", values.join("-")),
        description: sentence(`block content that mentions ${quotedList(values)}`),
        action: "deny",
        severity: "medium"
      })
    )
  )

/** Stem -> [noun for the id, verb for the description]. */
const PROMISE_WORDS: Record<string, readonly [string, string]> = {
  promis: ["promise", "promise"],
  guarantee: ["guarantee", "guarantee"],
  offer: ["offer", "offer"],
  commit: ["commitment", "commit to"],
  pledge: ["pledge", "pledge"]
}
const PROMISE_PATTERNS: ReadonlyArray<RegExp> = [
  re(
    String.raw`^never\s+(?:make\s+(?:\s*any\s+)?)?(?<stem>promis|guarantee|offer|commit|pledge)(?:es|e|ing|ting|s)?(?:\s+to)?`,
    String.raw`\s+(?:(?:about|of|regarding|on|for|that)\s+)?(?<x>.+)$`
  ),
  re(String.raw`^no\s+(?<x>.+?)\s+(?<stem>promis|guarantee|offer|commit|pledge)(?:e|ment)?s?$`)
]

const promiseDraft = (text: string): Option.Option<Draft> =>
  firstGroups(PROMISE_PATTERNS, text).pipe(
    Option.flatMap(({ stem = "", x = "" }) =>
      contentValues(x).pipe(
        Option.map((values) => {
          const [noun, verb] = PROMISE_WORDS[stem.toLowerCase()] ?? ["promise", "promise"]
          return rule(values, {
            id: makeId("no", values.join("-"), noun),
            description: sentence(`never ${verb} ${x.replace(CONTENT_TAIL, "").replace(/["']/g, "").toLowerCase()}`),
            action: "deny",
            severity: "high" // an unauthorised promise binds the business
          })
        })
      )
    )
  )

const REVEAL = re(String.raw`^never\s+(?:reveal|disclose|share|leak|expose|divulge)(?:s|es|ing)?\s+(?<x>.+)$`)

const revealDraft = (text: string): Option.Option<Draft> =>
  groups(REVEAL, text).pipe(
    Option.flatMap(({ x = "" }) => contentValues(x)),
    Option.map((values) =>
      rule(values, {
        id: makeId("no-reveal", values.join("-")),
        description: sentence(`never reveal ${quotedList(values)}`),
        action: "deny",
        severity: "high"
      })
    )
  )

// ---- tools: "never call the X tool"

const TOOL = re(
  String.raw`^(?:never|block|deny|forbid|disallow|disable|prohibit|prevent|ban)\s+(?:the\s+(?:agent|assistant|bot)\s+from\s+)?(?:(?:all|any)\s+)?`,
  String.raw`(?:(?:calls?|access|use|usage|invocations?)\s+(?:to|of)\s+)?`,
  String.raw`(?:(?:call|invoke|run|execute|trigger|use)(?:s|ing)?\s+|calling\s+|using\s+|invoking\s+|running\s+|executing\s+)?`,
  String.raw`(?:the\s+)?(?<kw1>(?:tool|function)s?\s+)?(?<names>.+?)(?<kw2>\s+(?:tool|function)s?)?(?:\s+calls?)?$`
)
const TOOL_IDENTIFIER = /^(?:[a-z][a-z0-9]*(?:[_.:-][a-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]*)+)$/

const toolDraft = (text: string): Option.Option<Draft> =>
  groups(TOOL, text).pipe(
    Option.flatMap(({ kw1, kw2, names = "" }) => {
      const items = splitItems(names)
      // Without the word "tool", only identifier-shaped names count ("never call delete_user").
      const named = kw1 !== undefined || kw2 !== undefined
      const accepted = items.every(
        (i) => i.quoted || (named ? i.text.split(" ").length <= 3 : TOOL_IDENTIFIER.test(i.text))
      )
      const tools = Arr.dedupe(items.map((i) => snake(i.text))).filter((t) => t !== "")
      return accepted && tools.length > 0 ? Option.some(tools) : Option.none()
    }),
    Option.map((tools) =>
      rule(tools, {
        id: makeId("block-tool", tools.join("-")),
        description: sentence(`block the ${quotedList(tools, "and")} tool${tools.length > 1 ? "s" : ""}`),
        action: "deny",
        severity: "high",
        family: "tool",
        target: "operation"
      })
    )
  )

// ---- entry points

/** Most specific first: e.g. "never share emails without approval" is an approval, not a redaction. */
const DRAFTERS: ReadonlyArray<(text: string) => Option.Option<Draft>> = [
  replaceDraft,
  approvalDraft,
  redactionDraft,
  escalationDraft,
  mentionDraft,
  promiseDraft,
  revealDraft,
  toolDraft
]

/** A policy draft for a natural-language prompt, or none when no known phrasing matches. */
export const draftPolicy = (prompt: string): Option.Option<Draft> => {
  if (prompt.length > MAX_PROMPT_LENGTH) return Option.none()
  const { text, severity } = normalize(prompt)
  return Arr.findFirst(DRAFTERS, (draft) => draft(text)).pipe(
    Option.map((draft) => Option.match(severity, { onNone: () => draft, onSome: (s) => ({ ...draft, severity: s }) }))
  )
}

/** The policy document for a draft, in the conventions' shape; disabled, so review comes first. */
export const draftToPolicyDocument = (draft: Draft): Schema.Schema.Encoded<typeof PolicyDocument> => ({
  id: draft.id,
  description: draft.description,
  family: draft.family,
  severity: draft.severity,
  action: draft.action,
  enabled: false,
  match: {
    type: draft.match_type,
    value: draft.match_values ?? draft.match_value,
    target: draft.target,
    case_sensitive: false
  },
  ...(draft.action === "rewrite" && draft.rewrite !== null ? { rewrite: draft.rewrite } : {})
})

/** YAML text ready for `POST /v1/policies` (no line folding, so regexes stay on one line). */
export const draftToPolicyYaml = (draft: Draft): string => stringify(draftToPolicyDocument(draft), { lineWidth: 0 })
