/**
 * Credentials: provider API keys by their published formats, JWTs, PEM
 * private keys, cloud connection strings and URLs with passwords, and
 * random-looking values assigned to key-like names (`api_key=...`,
 * `"auth_token": "..."`, `Authorization: Bearer ...`). Placeholders
 * (`sk-...`, `YOUR_API_KEY`, `xxxx`, `${TOKEN}`) are not secrets.
 */
import { entropy } from "./Checksums.js"
import { eachMatch, FindingSet } from "./Findings.js"
import { type TextViews, viewsOf } from "./Normalize.js"
import type { Finding, Span, TextView } from "./Types.js"

export interface SecretOptions {
  /** Minimum Shannon entropy (bits per character) of a value assigned to a key-like name; default 3.0. */
  readonly min_entropy?: number
}

const PLACEHOLDER =
  /x{6,}|X{6,}|0{8,}|\*{4,}|\.{3}|your|example|here|changeme|placeholder|dummy|redacted|<|>|\$\{|\{\{/i
const hasDigitAndLetter = (value: string) => /\d/.test(value) && /[A-Za-z]/.test(value)
const looksRandom = (value: string, minEntropy: number) =>
  !PLACEHOLDER.test(value) && entropy(value) >= minEntropy && hasDigitAndLetter(value) && !/(.)\1{5}/.test(value)

interface Format {
  readonly category: string
  readonly pattern: RegExp
  readonly message: string
  /** Which capture group holds the random part (0: the whole match). */
  readonly body?: number
}

// Each pattern: a literal prefix, one bounded character class; starts at a token boundary.
const B = "(?<![A-Za-z0-9_-])"
const E = "(?![A-Za-z0-9_-])"
const format = (category: string, source: string, message: string, body = 0): Format => ({
  category,
  pattern: new RegExp(source, "g"),
  message,
  body
})
const FORMATS: ReadonlyArray<Format> = [
  format("anthropic", `${B}sk-ant-(?:api|admin|oat|sid)\\d{2}-([A-Za-z0-9_-]{20,200})${E}`, "Anthropic API key", 1),
  format("openai", `${B}sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?([A-Za-z0-9_-]{20,200})${E}`, "OpenAI API key", 1),
  format(
    "aws",
    `(?<![A-Z0-9])((?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z2-7]{16})(?![A-Z0-9])`,
    "AWS access key id",
    1
  ),
  format("github", `${B}(gh[pousr]_[A-Za-z0-9]{36,255})${E}`, "GitHub token", 1),
  format("github", `${B}github_pat_([A-Za-z0-9_]{50,255})${E}`, "GitHub fine-grained token", 1),
  format("slack", `${B}xox[abposr]-([A-Za-z0-9-]{10,250})${E}`, "Slack token", 1),
  format(
    "slack",
    `https://hooks\\.slack\\.com/services/(T[A-Z0-9]{6,12}/B[A-Z0-9]{6,12}/[A-Za-z0-9]{20,40})`,
    "Slack webhook URL",
    1
  ),
  format("stripe", `${B}(?:sk|rk)_(?:live|test)_([A-Za-z0-9]{16,247})${E}`, "Stripe secret key", 1),
  format("stripe", `${B}whsec_([A-Za-z0-9]{24,64})${E}`, "Stripe webhook secret", 1),
  format("google", `${B}(AIza[0-9A-Za-z_-]{35})${E}`, "Google API key", 1),
  format("google", `${B}ya29\\.([0-9A-Za-z_-]{20,2048})${E}`, "Google OAuth access token", 1),
  format(
    "jwt",
    `${B}(eyJ[A-Za-z0-9_-]{8,4096}\\.eyJ[A-Za-z0-9_-]{8,8192}\\.[A-Za-z0-9_-]{16,1024})${E}`,
    "JSON Web Token",
    1
  ),
  format("cloud", `${B}hf_([A-Za-z0-9]{30,64})${E}`, "Hugging Face token", 1),
  format("cloud", `${B}npm_([A-Za-z0-9]{36})${E}`, "npm token", 1),
  format("cloud", `${B}glpat-([A-Za-z0-9_-]{20,64})${E}`, "GitLab token", 1),
  format("cloud", `${B}SG\\.([A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43})${E}`, "SendGrid API key", 1),
  format("cloud", `(?<![A-Za-z0-9])((?:SK|AC)[0-9a-f]{32})(?![A-Za-z0-9])`, "Twilio key", 1),
  format("cloud", `${B}dop_v1_([a-f0-9]{64})${E}`, "DigitalOcean token", 1),
  format("cloud", `AccountKey=([A-Za-z0-9+/]{40,200}={0,2})`, "Azure storage account key", 1)
]
const URL_PASSWORD = format(
  "cloud",
  `(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]{1,20}://[^\\s:@/]{1,64}:([^\\s:@/]{6,128})@[A-Za-z0-9.-]{1,253}`,
  "password in a connection URL",
  1
)
const ALL_FORMATS = [...FORMATS, URL_PASSWORD]

const PEM_BEGIN = /-----BEGIN ((?:[A-Z0-9]{1,16} ){0,3})PRIVATE KEY(?: BLOCK)?-----/g
const PEM_MAX_BODY = 16 * 1024

/** `api_key = "..."`, `"auth_token": "..."`, `client_secret=...`: the name ends in a key-like word. */
const ASSIGNED =
  /(?<![A-Za-z0-9])(?:api[_-]?key|apikey|key|token|secret|password|passwd|pwd|credentials?|auth|secret[_-]?key|access[_-]?key)["']?\s{0,4}[=:]\s{0,4}(?:"([^"\s]{12,256})"|'([^'\s]{12,256})'|([^\s"'`,;]{12,256}))/gi
const BEARER = /\bBearer\s{1,4}([A-Za-z0-9._~+/=-]{20,4096})/g
const IDENTIFIER_CHAR = /[A-Za-z0-9_-]/

/** The identifier a key-like word ends (for `aws_secret_access_key` the category is aws). */
const identifierBefore = (text: string, at: number) => {
  let start = at
  while (start > 0 && at - start < 64 && IDENTIFIER_CHAR.test(text[start - 1]!)) start--
  return text.slice(start, at)
}

const scanPem = (view: TextView, report: (span: Span, category: string, message: string) => void) => {
  if (view.text.indexOf("-----BEGIN") < 0) return
  eachMatch(PEM_BEGIN, view, (m) => {
    const bodyEnd = view.text.indexOf("-----END", m.index + m[0].length)
    const within = bodyEnd >= 0 && bodyEnd - m.index <= PEM_MAX_BODY
    const end = within ? view.text.indexOf("-----", bodyEnd + 8) + 5 : m.index + m[0].length
    report(view.toRaw(m.index, Math.max(end, m.index + m[0].length)), "pem", "PEM private key")
  })
}

const scanAssigned = (
  view: TextView,
  minEntropy: number,
  report: (span: Span, category: string, message: string) => void
) => {
  eachMatch(ASSIGNED, view, (m) => {
    const value = m[1] ?? m[2] ?? m[3] ?? ""
    if (!looksRandom(value, minEntropy)) return
    const valueAt = m.index + m[0].length - value.length - (m[3] === undefined ? 1 : 0)
    const name = identifierBefore(view.text, m.index) + m[0].slice(0, 16)
    const category = /aws/i.test(name) ? "aws" : "generic"
    report(view.toRaw(valueAt, valueAt + value.length), category, "random-looking value assigned to a key-like name")
  })
  if (view.text.indexOf("Bearer") >= 0) {
    eachMatch(BEARER, view, (m) => {
      const value = m[1]!
      if (looksRandom(value, minEntropy)) {
        const at = m.index + m[0].length - value.length
        report(view.toRaw(at, at + value.length), "generic", "bearer token")
      }
    })
  }
}

const covers = (outer: Span, inner: Span) => outer.start <= inner.start && outer.end >= inner.end

/** Secrets in `input` (a raw text or its views); provider formats win over the generic finding of the same value. */
export const detectSecrets = (input: string | TextViews, options: SecretOptions = {}): Array<Finding> => {
  const textViews = viewsOf(input)
  const minEntropy = options.min_entropy ?? 3.0
  const found = new FindingSet("secret")
  const report = (span: Span, category: string, message: string) => found.add(category, span, message)
  for (const view of textViews.literal) {
    const hasUrlCredentials = view.text.indexOf("://") >= 0 && view.text.indexOf("@") >= 0
    for (const { body, category, message, pattern } of ALL_FORMATS) {
      if (pattern === URL_PASSWORD.pattern && !hasUrlCredentials) continue
      eachMatch(pattern, view, (m) => {
        const random = m[body ?? 0] ?? m[0]
        if (PLACEHOLDER.test(random) || entropy(random) < 2.5) return
        report(view.toRaw(m.index, m.index + m[0].length), category, message)
      })
    }
    scanPem(view, report)
    scanAssigned(view, minEntropy, report)
  }
  const findings = found.result()
  const specific = findings.filter((finding) => finding.category !== "generic")
  return findings.filter(
    (finding) =>
      finding.category !== "generic" ||
      !finding.spans.every((span) =>
        specific.some((other) => other.spans.some((known) => covers(known, span) || covers(span, known)))
      )
  )
}
