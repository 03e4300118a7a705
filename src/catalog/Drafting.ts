/**
 * Deterministic natural-language policy drafting (no model) for `POST /v1/policies/draft`.
 * A few phrasing patterns each recognise one policy shape: never-promise, block-mention,
 * redaction, rewrite, approval, escalation/flag and tool block. Anything else is `Option.none()`,
 * which the endpoint answers with a 422 listing DRAFT_EXAMPLES. A draft is a proposal: the YAML it
 * renders starts disabled, so a person reviews it before it takes effect.
 */
import { Array as Arr, Option } from "effect"
import type { Schema } from "effect"
import { stringify } from "yaml"
import type { PolicyDocument } from "./Domain.js"
import {
  MAX_PROMPT_LENGTH,
  normalize,
  splitItems,
  CONTENT_TAIL,
  contentValues,
  quotedList,
  makeId,
  sentence,
  groups,
  firstGroups,
  re,
  snake,
  operationName,
  rule,
  type Draft
} from "./DraftPhrases.js"
import { redactionDraft, replaceDraft } from "./DraftRewrites.js"

export type { Draft, DraftTarget } from "./DraftPhrases.js"

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

/** The policy document's `match` of a draft. */
export const draftMatchOf = (draft: Draft) => ({
  type: draft.match_type,
  value: draft.match_values ?? draft.match_value,
  target: draft.target,
  case_sensitive: false
})

/** The policy document for a draft, in the conventions' shape; disabled, so review comes first. */
export const draftToPolicyDocument = (draft: Draft): Schema.Schema.Encoded<typeof PolicyDocument> => ({
  id: draft.id,
  description: draft.description,
  family: draft.family,
  severity: draft.severity,
  action: draft.action,
  enabled: false,
  match: draftMatchOf(draft),
  ...(draft.action === "rewrite" && draft.rewrite !== null ? { rewrite: draft.rewrite } : {})
})

/** YAML text ready for `POST /v1/policies` (no line folding, so regexes stay on one line). */
export const draftToPolicyYaml = (draft: Draft): string => stringify(draftToPolicyDocument(draft), { lineWidth: 0 })
