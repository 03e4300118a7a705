/**
 * What a pattern's estimated expansion (src/catalog/RegexExpansion.ts) costs RE2 to compile:
 * each pattern compiled once on a fresh re2-wasm instance (after one warm-up compile), printing
 * its estimate, whether the service accepts it, and the compile time or the engine's abort.
 * Patterns at the bound should compile in a few hundred ms at most and never abort; the ones
 * past it show what the bound keeps out. Saves bench/results/regex-expansion.txt.
 * Usage: npx tsx bench/regex-expansion.ts
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { expansionOf, MAX_EXPANSION } from "../src/catalog/RegexExpansion.js"

const requireEngine = createRequire(import.meta.url)
const engineModules = [requireEngine.resolve("re2-wasm"), requireEngine.resolve("re2-wasm/build/wasm/re2.js")]
type Engine = new (source: string, flags: string) => unknown

const freshEngine = (): Engine => {
  for (const id of engineModules) delete requireEngine.cache[id]
  const engine = (requireEngine("re2-wasm") as { readonly RE2: Engine }).RE2
  new engine("warm-up", "u")
  return engine
}

const PATTERNS = [
  String.raw`\b\d{3}-\d{2}-\d{4}\b`,
  String.raw`[\p{L}\p{N}]+@[\p{L}\p{N}]+\.[a-z]{2,24}`,
  String.raw`\p{L}`,
  String.raw`\p{L}{10}`,
  String.raw`\p{Lu}{2,5}`,
  String.raw`(?:\p{L}|\p{N}){5}`,
  String.raw`.{1000}`,
  String.raw`.{1000}.{1000}`,
  String.raw`[\s\S]{1000}`,
  String.raw`[[:^alpha:]]{1000}`,
  String.raw`\S{1000}`,
  String.raw`(?i)[a-z]{1000}`,
  String.raw`(?:abcdefghij){1000}`,
  // past the bound
  String.raw`\p{L}{10}\p{N}{10}`,
  String.raw`\p{L}{20}`,
  String.raw`[\p{L}\p{N}_]{1,20}`,
  String.raw`\p{L}{40}`,
  String.raw`\p{L}{100}`,
  String.raw`(?i)\p{Greek}{999}`,
  String.raw`\p{Han}{100}`,
  `(?:${"abcdefghij".repeat(150)}){1000}`,
  `(?:${"[a-z]".repeat(300)}){1000}`
]

const lines = [`bound: ${MAX_EXPANSION}; node ${process.version}; ${new Date().toISOString()}`]
for (const pattern of PATTERNS) {
  const engine = freshEngine()
  const started = performance.now()
  let outcome: string
  try {
    new engine(pattern, "u")
    outcome = `compiled in ${(performance.now() - started).toFixed(0)} ms`
  } catch (error) {
    outcome = `${error instanceof Error && error.name === "RuntimeError" ? "ABORTED the engine" : "refused by RE2"} after ${(performance.now() - started).toFixed(0)} ms`
  }
  const expansion = expansionOf(pattern)
  const shown = pattern.length > 50 ? `${pattern.slice(0, 50)}...` : pattern
  lines.push(
    `${String(expansion).padStart(9)}  ${expansion > MAX_EXPANSION ? "refused " : "accepted"}  ${outcome.padEnd(34)}  ${shown}`
  )
  console.log(lines[lines.length - 1])
}
mkdirSync(new URL("results/", import.meta.url), { recursive: true })
writeFileSync(new URL("results/regex-expansion.txt", import.meta.url), `${lines.join("\n")}\n`)
