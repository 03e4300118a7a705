/**
 * Worst-case matching time of user regexes on the linear-time engine: each classic catastrophic
 * pattern, compiled as a policy, matched against several 100 KB adversarial texts; prints per
 * pattern the slowest of 3 runs over the texts (JSON lines) and saves bench/results/regex.json.
 * (A backtracking engine needs minutes to years on the same inputs; it is not run here.)
 * Usage: npx tsx bench/regex.ts [kilobytes=100]
 */
import { Schema } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { PolicyDocument } from "../src/catalog/Domain.js"
import { compilePolicy } from "../src/catalog/PolicyLanguage.js"

const size = Number(process.argv[2] ?? 100) * 1000

const PATTERNS = [
  String.raw`^(a+)+$`,
  String.raw`(a*)*b`,
  String.raw`([a-zA-Z]+)*1`,
  String.raw`(\d+)*x`,
  String.raw`(a|aa)+$`,
  String.raw`(a|a)*b`,
  String.raw`(.*a){20}`,
  String.raw`(a?){25}a{25}`,
  String.raw`(\w+\s?)+$`,
  String.raw`(.|\s)*z`,
  String.raw`.*a.*a.*a.*b`,
  String.raw`.*x.*x.*x.*y`,
  String.raw`^[\w.+-]+@([\w-]+\.)+[\w-]{2,}$`,
  String.raw`^(https?://)?([\da-z.-]+)\.([a-z.]{2,6})([/\w .-]*)*/?$`,
  String.raw`[a-q][^u-z]{13}x`,
  String.raw`\b\d{4}[- ]?\d{4}[- ]?\d{4}[- ]?\d{4}\b`
]

const fill = (unit: string) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size)
let seed = 42
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
const INPUTS: Record<string, string> = {
  "a*": fill("a"),
  "a*!": `${fill("a").slice(1)}!`,
  "x*": fill("x"),
  "digits": `${fill("1234 ").slice(1)}!`,
  "words": `${fill("word ").slice(1)}!`,
  "email-ish": `${fill("a.b-c").slice(1)}@`,
  "url-ish": `http://${fill("a/b.c").slice(8)}!`,
  "random a-z": Array.from({ length: size }, () => String.fromCharCode(97 + Math.floor(random() * 26))).join("")
}

const policyFor = (pattern: string) =>
  compilePolicy(
    Schema.decodeUnknownSync(PolicyDocument)({
      id: "bench",
      description: "bench",
      family: "content",
      severity: "high",
      action: "deny",
      match: { type: "regex", value: pattern, target: "content" }
    })
  )

const results = PATTERNS.map((pattern) => {
  const policy = policyFor(pattern)
  if (policy.errors.length > 0) {
    const refused = { pattern, refused: policy.errors.map((e) => e.message).join("; ") }
    console.log(JSON.stringify(refused))
    return refused
  }
  let worst = { ms: 0, input: "", matches: 0 }
  for (const [input, text] of Object.entries(INPUTS)) {
    for (let run = 0; run < 3; run++) {
      const started = performance.now()
      const matches = policy.match({ operation: "reply", content: text }).length
      const ms = performance.now() - started
      if (ms > worst.ms) worst = { ms, input, matches }
    }
  }
  const line = {
    pattern,
    engine: "re2",
    kilobytes: size / 1000,
    worst_ms: Number(worst.ms.toFixed(1)),
    worst_input: worst.input,
    matches: worst.matches
  }
  console.log(JSON.stringify(line))
  return line
})

mkdirSync(new URL("./results/", import.meta.url), { recursive: true })
writeFileSync(new URL("./results/regex.json", import.meta.url), `${JSON.stringify({ node: process.version, size, results }, null, 2)}\n`)
