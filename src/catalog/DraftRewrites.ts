/**
 * Drafts that rewrite content (Drafting.ts): redacting the kinds of
 * personal data a prompt names ("redact credit card numbers"), and
 * replacing one phrase with another ("replace 'guarantee' with 'aim to'").
 */
import { Array as Arr, Option } from "effect"
import {
  DETERMINER,
  toItem,
  splitItems,
  literalOf,
  quotedList,
  makeId,
  sentence,
  groups,
  re,
  rule,
  type Draft
} from "./DraftPhrases.js"

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
export const redaction = (kinds: Arr.NonEmptyReadonlyArray<Pii>, replacement: Option.Option<string>): Draft => {
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

export const redactionDraft = (text: string): Option.Option<Draft> =>
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

export const replaceDraft = (text: string): Option.Option<Draft> =>
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
