/**
 * Prompt injection: a score from 0 to 1 for attempts to override the
 * model's instructions, impersonate a system message, hijack its role,
 * extract its prompt, hide instructions for it in data, or make it send data
 * away. Signals (InjectionSignals.ts) are looked for in every view of the
 * text (raw, folded, deobfuscated, ROT13, decoded spans); each distinct
 * signal counts once, and the score is 1 - prod(1 - weight).
 */
import { eachMatch, unionSpans } from "./Findings.js"
import { INJECTION_SIGNALS, type InjectionSignal } from "./InjectionSignals.js"
import { TriggerIndex } from "./Triggers.js"
import { type TextViews, viewsOf } from "./Normalize.js"
import type { Finding, Span } from "./Types.js"

export interface PromptInjectionOptions {
  /** Report when the score reaches this; default 0.5. */
  readonly threshold?: number
}

export const DEFAULT_INJECTION_THRESHOLD = 0.5

/** Every distinct trigger once, and per signal the indices of its triggers. */
const TRIGGERS = [...new Set(INJECTION_SIGNALS.flatMap((signal) => signal.triggers))]
const SIGNAL_TRIGGERS = INJECTION_SIGNALS.map((signal) => signal.triggers.map((trigger) => TRIGGERS.indexOf(trigger)))
/** A match lies within this many characters before and after one of its signal's triggers (the patterns' gaps are bounded). */
const WINDOW_BEFORE = 320
const WINDOW_AFTER = 400
const TRIGGER_INDEX = new TriggerIndex(TRIGGERS)
/**
 * Signals of symbols and addresses (chat-template tokens, e-mail addresses,
 * URLs, placeholders) that the deobfuscated view could alter (leetspeak
 * turns "@" into "a"): also scanned in the raw text. Signals of words are
 * found in the deobfuscated view, which holds the raw words in lower case.
 */
const LITERAL_SIGNALS = new Set([
  "chat_template",
  "llama_template",
  "system_header",
  "system_label",
  "hidden_comment",
  "send_to_address",
  "send_sensitive",
  "image_exfil",
  "data_placeholder"
])
const LITERAL_TRIGGERS = TRIGGERS.map((trigger) =>
  INJECTION_SIGNALS.some((signal) => LITERAL_SIGNALS.has(signal.name) && signal.triggers.includes(trigger))
    ? trigger
    : ""
)
const LITERAL_TRIGGER_INDEX = new TriggerIndex(LITERAL_TRIGGERS)

const isWordChar = (code: number) =>
  (code >= 0x30 && code <= 0x39) || ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a) || code === 0x5f

/**
 * Runs a signal's pattern only over windows around its triggers' hits, so
 * a text without the words a signal needs costs nothing but the look-ups.
 * A window starts at a word boundary, so `\b` and look-behinds see the text.
 */
const scanWindows = (
  signal: InjectionSignal,
  text: string,
  hits: ReadonlyArray<number>,
  onMatch: (start: number, end: number) => void
) => {
  const sorted = hits.length > 1 ? [...hits].sort((a, b) => a - b) : hits
  let index = 0
  while (index < sorted.length) {
    let start = Math.max(0, sorted[index]! - WINDOW_BEFORE)
    let end = Math.min(text.length, sorted[index]! + WINDOW_AFTER)
    index++
    while (index < sorted.length && sorted[index]! - WINDOW_BEFORE <= end)
      end = Math.min(text.length, sorted[index++]! + WINDOW_AFTER)
    while (start > 0 && isWordChar(text.charCodeAt(start - 1))) start--
    const window = start === 0 && end === text.length ? text : text.slice(start, end)
    const pattern = signal.pattern
    pattern.lastIndex = 0
    for (let m = pattern.exec(window); m !== null; m = pattern.exec(window)) {
      if (m[0].length === 0) pattern.lastIndex++
      onMatch(start + m.index, start + m.index + m[0].length)
    }
  }
}

/** Signals found, with their raw spans; exported so a caller can explain a score. */
export const injectionSignals = (input: string | TextViews): Map<InjectionSignal, Array<Span>> => {
  const textViews = viewsOf(input)
  const found = new Map<InjectionSignal, Array<Span>>()
  for (const view of textViews.phrasing) {
    const lower = view.kind === "deobfuscated" ? view.text : view.text.toLowerCase()
    // toLowerCase keeps offsets for the scripts the triggers are written in; a text where it does not is scanned whole.
    const sameLength = lower.length === view.text.length
    // Raw text the deobfuscated view repeats in lower case adds nothing.
    if (view.kind === "raw" && textViews.deobfuscated.text === lower) continue
    const literalOnly = view.kind === "raw"
    const triggerHits = (literalOnly ? LITERAL_TRIGGER_INDEX : TRIGGER_INDEX).scan(lower)
    for (let s = 0; s < INJECTION_SIGNALS.length; s++) {
      const signal = INJECTION_SIGNALS[s]!
      if (literalOnly && !LITERAL_SIGNALS.has(signal.name)) continue
      const triggerIndices = SIGNAL_TRIGGERS[s]!
      let hits: Array<number> | undefined
      for (const trigger of triggerIndices) {
        const at = triggerHits[trigger]
        if (at !== undefined) (hits ??= []).push(...at)
      }
      if (hits === undefined) continue
      const record = (start: number, end: number) => {
        const span = view.toRaw(start, end)
        const spans = found.get(signal)
        if (spans === undefined) found.set(signal, [span])
        else spans.push(span)
      }
      if (sameLength) scanWindows(signal, view.text, hits, record)
      else eachMatch(signal.pattern, view, (m) => record(m.index, m.index + m[0].length))
    }
  }
  return found
}

export const scoreOf = (signals: Iterable<InjectionSignal>) => {
  let clean = 1
  for (const signal of signals) clean *= 1 - signal.weight
  return Math.round((1 - clean) * 1000) / 1000
}

/** One finding when the score reaches the threshold: the strongest signal's category, every signal's span. */
export const detectPromptInjection = (
  input: string | TextViews,
  options: PromptInjectionOptions = {}
): Array<Finding> => {
  const signals = injectionSignals(input)
  if (signals.size === 0) return []
  const score = scoreOf(signals.keys())
  if (score < (options.threshold ?? DEFAULT_INJECTION_THRESHOLD)) return []
  let strongest: InjectionSignal | undefined
  const spans: Array<Span> = []
  for (const [signal, found] of signals) {
    if (strongest === undefined || signal.weight > strongest.weight) strongest = signal
    spans.push(...found)
  }
  const names = [...signals.keys()].map((signal) => signal.name).join(", ")
  return [
    {
      detector: "prompt_injection",
      category: strongest!.category,
      score,
      spans: unionSpans(spans),
      message: `prompt injection (score ${score}): ${names}`
    }
  ]
}
