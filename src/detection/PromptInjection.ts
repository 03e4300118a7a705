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
import { type TextViews, viewsOf } from "./Normalize.js"
import type { Finding, Span } from "./Types.js"

export interface PromptInjectionOptions {
  /** Report when the score reaches this; default 0.5. */
  readonly threshold?: number
}

export const DEFAULT_INJECTION_THRESHOLD = 0.5

/** Signals found, with their raw spans; exported so a caller can explain a score. */
export const injectionSignals = (input: string | TextViews): Map<InjectionSignal, Array<Span>> => {
  const textViews = viewsOf(input)
  const found = new Map<InjectionSignal, Array<Span>>()
  for (const view of textViews.all) {
    for (const signal of INJECTION_SIGNALS) {
      eachMatch(signal.pattern, view, (m) => {
        const span = view.toRaw(m.index, m.index + m[0].length)
        const spans = found.get(signal)
        if (spans === undefined) found.set(signal, [span])
        else spans.push(span)
      })
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
export const detectPromptInjection = (input: string | TextViews, options: PromptInjectionOptions = {}): Array<Finding> => {
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
