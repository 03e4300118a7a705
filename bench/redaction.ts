/**
 * Redaction's time on large adversarial texts (src/privacy/Redaction.ts, the `redacted` data handling mode):
 * each shape repeated to 1 MiB and 4 MiB (the content cap), the slowest of 3 runs each, and the ratio of the
 * two (about 4 when the scan is linear; a quadratic pattern shows 16 and took minutes at 1 MiB). Prints JSON
 * lines and saves bench/results/redaction.json.
 * Usage: npx tsx bench/redaction.ts
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { redactText } from "../src/privacy/Redaction.js"

const SHAPES = [
  "a",
  "a-b-",
  "a.",
  "x_",
  "1",
  "a@b.",
  "key ",
  "DE89 ",
  "4111 ",
  "1234567890123456789012x ",
  "+1 (12) 1234567890123456789012x "
]

const slowestOf3 = (text: string) => {
  let slowest = 0
  for (let run = 0; run < 3; run++) {
    const started = performance.now()
    redactText(text)
    slowest = Math.max(slowest, performance.now() - started)
  }
  return Math.round(slowest)
}

const results = SHAPES.map((shape) => {
  const of = (bytes: number) => shape.repeat(Math.ceil(bytes / shape.length))
  const oneMiB = slowestOf3(of(1_048_576))
  const fourMiB = slowestOf3(of(4_194_304))
  const result = {
    shape,
    ms_1mib: oneMiB,
    ms_4mib: fourMiB,
    ratio: Math.round((fourMiB / Math.max(1, oneMiB)) * 10) / 10
  }
  console.log(JSON.stringify(result))
  return result
})
mkdirSync("bench/results", { recursive: true })
writeFileSync("bench/results/redaction.json", JSON.stringify({ at: new Date().toISOString(), results }, null, 2))
