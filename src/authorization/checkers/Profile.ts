/**
 * Agent-profile checks on proposed text: promises the agent may not make,
 * out-of-scope topics, forbidden tone words (rewritten away) and escalation
 * triggers (deferred to a human, status `escalated`).
 */
import type { AgentProfile } from "../../catalog/Agents.js"
import { checkMatchDeadline } from "../../catalog/MatchDeadline.js"
import { replaceSpans } from "../../catalog/PolicyLanguage.js"
import { viewsFor } from "../../catalog/PolicyMatching.js"
import type { DecisionEffect } from "../Domain.js"
import type { Checker, EventKind, FindingDraft } from "../Pipeline.js"

/** Escalation triggers read what comes in and what goes out; the other profile checks only what goes out. */
const inputAndProposed: ReadonlySet<EventKind> = new Set(["input.received", "output.proposed"])

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Scripts written without spaces between words: a word boundary there would miss "保证给您退款". */
const UNSPACED =
  "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Thai}\\p{Script=Lao}\\p{Script=Khmer}\\p{Script=Myanmar}"
const startsUnspaced = new RegExp(`^[${UNSPACED}]`, "u")
const endsUnspaced = new RegExp(`[${UNSPACED}]$`, "u")

/** Whole-word, case-insensitive occurrences of a phrase (no boundary at an edge in an unspaced script). */
const phrasePattern = (phrase: string) => {
  const text = phrase.trim()
  const before = startsUnspaced.test(text) ? "" : "(?<![\\p{L}\\p{N}])"
  const after = endsUnspaced.test(text) ? "" : "(?![\\p{L}\\p{N}])"
  return new RegExp(`${before}${escapeRegex(text)}${after}`, "giu")
}

const patterns = new Map<string, RegExp>()
const patternFor = (phrase: string) => {
  let pattern = patterns.get(phrase)
  if (pattern === undefined) {
    pattern = phrasePattern(phrase)
    if (patterns.size > 10_000) patterns.clear()
    patterns.set(phrase, pattern)
  }
  pattern.lastIndex = 0
  return pattern
}

/**
 * The content as the phrases are also read in: NFKC (a no-break or full-width space is a space),
 * invisible characters removed, look-alike letters folded, so "full re\u200bfund" or a Cyrillic "е"
 * does not slip a phrase past. Shared with the content policies' normalised views of the same text.
 */
const foldedOf = (content: string) => viewsFor(content).folded

const mentions = (content: string, phrase: string) => {
  if (phrase.trim() === "") return false
  // Up to 200 phrases a list, each a scan of content at the cap: the decision's match deadline holds between them.
  checkMatchDeadline()
  if (patternFor(phrase).test(content)) return true
  const folded = foldedOf(content)
  return folded.text !== content && patternFor(phrase).test(folded.text)
}

/** Replaces every whole-word occurrence of `word` in `text`, as written or as folded (the raw range it came from). */
const rewriteWord = (text: string, word: string, replacement: string) => {
  checkMatchDeadline()
  const ranges: Array<{ start: number; end: number }> = []
  for (const match of text.matchAll(patternFor(word)))
    ranges.push({ start: match.index, end: match.index + match[0].length })
  const folded = foldedOf(text)
  if (folded.text !== text) {
    for (const match of folded.text.matchAll(patternFor(word))) {
      ranges.push(folded.toRaw(match.index, match.index + match[0].length))
    }
  }
  return replaceSpans(text, ranges, replacement)
}

const everyKind: ReadonlySet<EventKind> = new Set(["input.received", "tool.result", "output.proposed"])

/**
 * An event for an agent the workspace has no profile of: said in a finding (a typo would otherwise skip every
 * profile check unnoticed), whose effect is the workspace's default action.
 */
const unregistered = (agentId: string, effect: DecisionEffect): FindingDraft => ({
  policy_id: null,
  requirement_id: "agent.registered",
  reason: `Agent ${agentId} is not registered in this workspace, so no profile was checked; the workspace's default action (${effect}) applies.`,
  remediation: `Register it with POST /v1/agents, or send the agent_id of a registered agent.`,
  effect,
  severity: "medium",
  evidence: { agent_id: agentId }
})

/**
 * A registered profile none of these checks can find anything in (no phrase, topic, word or trigger; canaries
 * are matched too): for such an agent, with no policy, deciding would only cost time (the gateway skips it).
 */
export const profileFindsNothing = (agent: AgentProfile | undefined) =>
  agent !== undefined &&
  agent.authority.cannot_promise.length === 0 &&
  agent.scope.out_of_scope.length === 0 &&
  agent.tone.forbidden.length === 0 &&
  agent.escalation_triggers.length === 0 &&
  (agent.canaries?.length ?? 0) === 0

export const profileChecker: Checker = {
  name: "profile",
  kinds: everyKind,
  check: ({ action, agent, agentId, defaultEffect, kind }) => {
    if (agent === undefined) return [unregistered(agentId, defaultEffect ?? "permit")]
    const content = action.content
    if (!inputAndProposed.has(kind) || content === undefined || content === "") return []
    const findings: Array<FindingDraft> = []
    const found = (draft: FindingDraft) => findings.push(draft)
    // What comes in is only checked for escalation triggers: promises, scope and tone are the agent's own words.
    const proposed = kind === "output.proposed"
    for (const phrase of proposed ? agent.authority.cannot_promise : []) {
      if (mentions(content, phrase)) {
        found({
          policy_id: null,
          requirement_id: `authority.cannot_promise:${phrase}`,
          reason: `${agent.agent_id} may not promise "${phrase}".`,
          remediation: "Do not commit to this; offer what the agent can promise or escalate.",
          effect: "deny",
          severity: "high",
          evidence: { phrase }
        })
      }
    }
    for (const topic of proposed ? agent.scope.out_of_scope : []) {
      if (mentions(content, topic)) {
        found({
          policy_id: null,
          requirement_id: `scope.out_of_scope:${topic}`,
          reason: `"${topic}" is outside ${agent.agent_id}'s scope.`,
          remediation: "Hand the conversation to someone in scope.",
          effect: "defer",
          severity: "medium",
          evidence: { topic }
        })
      }
    }
    for (const word of proposed ? agent.tone.forbidden : []) {
      if (mentions(content, word)) {
        found({
          policy_id: null,
          requirement_id: `tone.forbidden:${word}`,
          reason: `"${word}" does not fit the ${agent.tone.target} tone.`,
          remediation: null,
          effect: "rewrite",
          severity: "low",
          evidence: { word },
          rewrite: (text) => rewriteWord(text, word, "[removed]")
        })
      }
    }
    for (const trigger of agent.escalation_triggers) {
      if (mentions(content, trigger)) {
        found({
          policy_id: null,
          requirement_id: `escalation_triggers:${trigger}`,
          reason: `"${trigger}" needs a human.`,
          remediation: "A human reviewer takes over this conversation.",
          effect: "defer",
          severity: "high",
          evidence: { trigger },
          escalate: true
        })
      }
    }
    return findings
  }
}
