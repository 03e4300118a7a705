/**
 * Ceiling for the detectors' goal (issue 17: all packs on 4 KiB under
 * 0.5 ms median): what building the normalised views alone costs, and what
 * a plain program doing comparable guaranteed work reaches (three views of
 * the text, eight format and phrase regexes over each), on the same
 * windows of benign corpus text as bench/detectors.ts. Prints medians in ms.
 * Usage: npx tsx bench/ceiling-detectors.ts
 */
import { readdirSync, readFileSync } from "node:fs"
import { views } from "../src/detection/index.js"

interface CorpusFile {
  readonly cases: ReadonlyArray<{ readonly text: string; readonly expect: boolean }>
}
const fixtures = new URL("../test/fixtures/detectors/", import.meta.url)
const benign = readdirSync(fixtures)
  .filter((name) => name.endsWith(".json"))
  .flatMap((name) => (JSON.parse(readFileSync(new URL(name, fixtures), "utf8")) as CorpusFile).cases)
  .filter((c) => !c.expect)
  .map((c) => c.text)
const source = benign.join("\n").repeat(20)
const windows = Array.from({ length: 64 }, (_, i) => source.slice(i * 997, i * 997 + 4096))

const medianMillis = (run: (text: string) => unknown) => {
  for (let i = 0; i < 300; i++) run(windows[i % windows.length]!)
  const times: Array<number> = []
  for (let i = 0; i < 2000; i++) {
    const start = performance.now()
    run(windows[i % windows.length]!)
    times.push(performance.now() - start)
  }
  return times.sort((a, b) => a - b)[times.length >> 1]!.toFixed(3)
}

const PLAIN_PATTERNS = [
  /\b\d{13,19}\b/g,
  /[\w.+-]+@[\w-]+\.[\w.]+/g,
  /https?:\/\/\S+/g,
  /sk-[A-Za-z0-9]{20,}/g,
  /ignore (all )?previous/g,
  /\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b/g,
  /eyJ[\w-]+\.[\w-]+\.[\w-]+/g,
  /\+?\d[\d -]{7,}\d/g
]
const plainScan = (text: string) => {
  let found = 0
  for (const view of [text, text.normalize("NFKC"), text.toLowerCase()]) {
    for (const pattern of PLAIN_PATTERNS) {
      pattern.lastIndex = 0
      while (pattern.exec(view) !== null) found++
    }
  }
  return found
}

console.log(
  JSON.stringify({
    bench: "ceiling-detectors",
    bytes: 4096,
    views_median_ms: Number(
      medianMillis((text) => {
        const built = views(text)
        return [built.folded.text, built.deobfuscated.text, built.decoded.length]
      })
    ),
    plain_three_views_eight_regexes_median_ms: Number(medianMillis(plainScan))
  })
)
