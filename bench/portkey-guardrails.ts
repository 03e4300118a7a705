/**
 * Portkey's own guardrail checks for bench/gateway.ts: the closest its
 * open-source gateway offers to our `pii-basic` and `prompt-injection` packs
 * plus 50 content policies. Its built-in (`default.*`) plugins are regex and
 * word-list checks, so: one `regexMatch` per personal-data pattern (card,
 * IBAN, SSN, e-mail, phone), and a `contains` (`operator: none`) over the
 * injection phrases and the 50 forbidden phrases, each failing the request
 * (`deny: true`) on input and on output, as ours are enforced on both.
 */

/** Personal-data patterns (Portkey has no checksum validation: plain regexes). */
const PII_PATTERNS = [
  "\\b(?:\\d[ -]?){13,19}\\b",
  "\\b[A-Z]{2}\\d{2}(?: ?[A-Z0-9]{4}){3,7}\\b",
  "\\b\\d{3}-\\d{2}-\\d{4}\\b",
  "[\\w.+-]+@[\\w-]+\\.[\\w.]+",
  "\\+?\\d[\\d ()-]{8,}\\d"
]

/** Instruction-override phrases (Portkey's word list is exact substrings, case-sensitive). */
const INJECTION_PHRASES = [
  "ignore previous instructions",
  "ignore all previous instructions",
  "disregard the above",
  "forget your instructions",
  "you are now",
  "act as",
  "developer mode",
  "jailbreak",
  "system prompt",
  "reveal your instructions",
  "do anything now",
  "pretend you are",
  "new instructions",
  "override your",
  "bypass your"
]

const phrases = Array.from({ length: 50 }, (_, i) => `forbidden phrase ${String(i).padStart(3, "0")}`)

const checks = (words: ReadonlyArray<string>) => ({
  ...Object.fromEntries(
    PII_PATTERNS.map((rule, i) => [`default.regexMatch#${i}`, { id: "default.regexMatch", rule, not: true }])
  ),
  "default.contains": { words, operator: "none" },
  deny: true
})

/** The `x-portkey-config` header value: the checks on input and on output. */
export const portkeyGuardrailConfig = JSON.stringify({
  input_guardrails: [checks([...INJECTION_PHRASES, ...phrases])],
  output_guardrails: [checks(phrases)]
})

/** Portkey's gateway on `port` in front of the stub on `stubPort`: without checks, and with them. */
export const portkeyTargets = (port: number, stubPort: number) => {
  const url = `http://127.0.0.1:${port}/v1/chat/completions`
  const headers = {
    authorization: "Bearer sk-bench",
    "content-type": "application/json",
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": `http://127.0.0.1:${stubPort}/v1`
  }
  return {
    plain: { name: "portkey", url, headers },
    guarded: { name: "portkey-guarded", url, headers: { ...headers, "x-portkey-config": portkeyGuardrailConfig } }
  }
}
