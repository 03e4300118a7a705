/**
 * Detector benchmark: median and p99 time per event of each built-in
 * detector (src/detection) and of all of them together (`detectAll`, views
 * built once), on 1 KiB, 4 KiB and 64 KiB of mixed benign content (support
 * chat, code, docs, logs in the corpus' ten languages, with e-mail
 * addresses, URLs and numbers a detector must look at and let go).
 * Every event is a different window of the text, so nothing is cached
 * between events. Prints JSON lines and saves them with a table to
 * bench/results/detectors-<date>.txt.
 * `all packs` is every policy of every guard pack (src/catalog/PackDocuments.ts) compiled
 * and matched as the decision pipeline does, views shared between them.
 * Usage: npx tsx bench/detectors.ts [events=2000]
 * Goal (issue 17): all packs together on 4 KiB under 0.5 ms median.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { loadavg } from "node:os"
import { Schema } from "effect"
import { PolicyDocument } from "../src/catalog/Domain.js"
import { GUARD_PACKS } from "../src/catalog/PackDocuments.js"
import { compilePolicy } from "../src/catalog/PolicyLanguage.js"
import { detect, detectAll, type DetectorName, type DetectorOptions } from "../src/detection/index.js"

const events = Number(process.argv[2] ?? 2000)
const SIZES = [1024, 4096, 65536] as const
const DETECTORS: ReadonlyArray<DetectorName> = ["pii", "secret", "prompt_injection", "system_prompt_leak", "url"]

const fixtures = new URL("../test/fixtures/detectors/", import.meta.url)
interface CorpusFile {
  readonly options?: Record<string, unknown>
  readonly cases: ReadonlyArray<{ readonly text: string; readonly expect: boolean }>
}
const corpus = readdirSync(fixtures)
  .filter((name) => name.endsWith(".json"))
  .sort()
  .map((name) => JSON.parse(readFileSync(new URL(name, fixtures), "utf8")) as CorpusFile)

/** The benign cases of every detector, interleaved with plain prose: what most traffic looks like. */
const benign = corpus.flatMap((file) => file.cases.filter((c) => !c.expect).map((c) => c.text))
const prose = [
  "Thanks for getting back to me so quickly. I checked the dashboard again this morning and the numbers look right now.",
  "The deployment finished at 14:32 UTC; p99 latency went from 180 ms to 95 ms after the cache change.",
  "function total(items) { return items.reduce((sum, item) => sum + item.price * item.quantity, 0) }",
  "Our refund policy allows returns within 30 days of delivery, provided the item is unused and in its original packaging."
]
const pool: Array<string> = []
for (let i = 0; i < benign.length; i++) pool.push(benign[i]!, prose[i % prose.length]!)
const text = pool.join("\n")
const source = text.repeat(Math.ceil((2 * SIZES[SIZES.length - 1]) / text.length))

const leakOptions = corpus.find((file) => file.options !== undefined && "system_prompt" in file.options)?.options ?? {}
const urlOptions = corpus.find((file) => file.options !== undefined && "allow" in file.options)?.options ?? {}
const options = { system_prompt_leak: leakOptions, url: urlOptions } as Partial<DetectorOptions>

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

const measure = (size: number, run: (content: string) => unknown) => {
  const count = size >= 65536 ? Math.max(50, Math.floor(events / 10)) : events
  const windows = Array.from({ length: 64 }, (_, i) => source.slice(i * 997, i * 997 + size))
  for (let i = 0; i < Math.min(200, count); i++) run(windows[i % windows.length]!)
  const times: Array<number> = []
  const cpuBefore = process.cpuUsage()
  for (let i = 0; i < count; i++) {
    const content = windows[i % windows.length]!
    const start = performance.now()
    run(content)
    times.push(performance.now() - start)
  }
  const cpu = process.cpuUsage(cpuBefore)
  times.sort((a, b) => a - b)
  return {
    median_ms: Number(percentile(times, 0.5).toFixed(4)),
    p99_ms: Number(percentile(times, 0.99).toFixed(4)),
    // CPU time of this process per event: on a shared machine, what the work costs apart from waiting for a core.
    cpu_ms: Number(((cpu.user + cpu.system) / 1000 / count).toFixed(4)),
    events: count
  }
}

/**
 * Every policy of every guard pack, compiled as the decision pipeline compiles them, matched
 * against a reply (each policy whatever its applies_to: the most one event could cost).
 */
const packPolicies = GUARD_PACKS.flatMap((pack) => pack.policies).map((document) =>
  compilePolicy(Schema.decodeUnknownSync(PolicyDocument)(document))
)
const packAgent = {
  system_prompt: typeof leakOptions["system_prompt"] === "string" ? leakOptions["system_prompt"] : null,
  canaries: Array.isArray(leakOptions["canaries"]) ? leakOptions["canaries"].map(String) : []
}
const allPacks = (content: string) => {
  let matches = 0
  for (const policy of packPolicies) matches += policy.match({ operation: "reply", content }, packAgent).length
  return matches
}

const lines: Array<string> = []
const rows: Array<string> = []
for (const size of SIZES) {
  for (const name of [...DETECTORS, "all", "all packs"] as const) {
    const result =
      name === "all"
        ? measure(size, (content) => detectAll(content, options))
        : name === "all packs"
          ? measure(size, allPacks)
          : measure(size, (content) => detect(name, content, options[name]))
    const line = JSON.stringify({ bench: "detectors", detector: name, bytes: size, ...result })
    console.log(line)
    lines.push(line)
    rows.push(
      `| ${name} | ${size / 1024} KiB | ${result.median_ms.toFixed(3)} | ${result.p99_ms.toFixed(3)} | ${result.cpu_ms.toFixed(3)} |`
    )
  }
}

const date = new Date().toISOString().slice(0, 10)
const header = `detectors benchmark ${new Date().toISOString()} node ${process.version}, load average ${loadavg()
  .map((l) => l.toFixed(1))
  .join(" ")}, events per size: ${events} (64 KiB: ${Math.max(50, Math.floor(events / 10))})\n`
const table = ["| detector | content | median ms | p99 ms | CPU ms per event |", "|---|---|---|---|---|", ...rows].join(
  "\n"
)
mkdirSync(new URL("results/", import.meta.url), { recursive: true })
writeFileSync(new URL(`results/detectors-${date}.txt`, import.meta.url), `${header}\n${lines.join("\n")}\n\n${table}\n`)
console.log(`\n${table}`)
