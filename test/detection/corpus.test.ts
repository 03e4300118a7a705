/**
 * Every detector against its corpus (test/fixtures/detectors): each tuning
 * case as its own test, then recall, precision and false-positive rate on
 * both halves against floors. The tuning floors are the (recall
 * >= 0.9, FPR <= 0.02); the held-out floors are what the detectors scored
 * when first measured on that half, minus a margin (docs/detectors.md),
 * so they catch regressions without being tuned to.
 */
import { describe, expect, it } from "@effect/vitest"
import type { DetectorName } from "../../src/detection/index.js"
import { loadCorpus, measure, outcome } from "./corpus.js"

const DETECTORS: ReadonlyArray<DetectorName> = ["pii", "secret", "prompt_injection", "system_prompt_leak", "url"]

/** Tuning cases the detectors are known to miss, and why (kept visible rather than dropped from the corpus). */
const KNOWN_TUNING_MISSES: Record<string, string> = {
  "url-tuning-21": "a URL spelled out letter by letter with spaces around ':' '/' and '.' is not rebuilt"
}

/**
 * First held-out measurement (commit 270c201): pii recall 0.931 / FPR 0.033,
 * secret 1.000 / 0, prompt_injection 0.969 / 0, system_prompt_leak 0.969 / 0,
 * url 0.966 / 0.034. Floors: about 0.07 below that recall, 0.05 above that FPR.
 */
const HELD_OUT_FLOORS: Record<DetectorName, { readonly recall: number; readonly falsePositiveRate: number }> = {
  pii: { recall: 0.86, falsePositiveRate: 0.08 },
  secret: { recall: 0.93, falsePositiveRate: 0.05 },
  prompt_injection: { recall: 0.9, falsePositiveRate: 0.05 },
  system_prompt_leak: { recall: 0.9, falsePositiveRate: 0.05 },
  url: { recall: 0.9, falsePositiveRate: 0.08 }
}

for (const detector of DETECTORS) {
  describe(`${detector} detector, tuning corpus`, () => {
    const file = loadCorpus(detector, "tuning")
    for (const testCase of file.cases) {
      if (KNOWN_TUNING_MISSES[testCase.id] !== undefined) continue
      const what = testCase.expect ? `finds ${testCase.category ?? "it"} in` : "stays quiet on"
      it(`${what} ${testCase.id} (${testCase.note})`, () => {
        const { correct, findings } = outcome(file, testCase)
        expect({ correct, findings }).toMatchObject({ correct: true })
      })
    }
    it("has at least 28 positive and 28 negative cases", () => {
      expect(file.cases.filter((c) => c.expect).length).toBeGreaterThanOrEqual(28)
      expect(file.cases.filter((c) => !c.expect).length).toBeGreaterThanOrEqual(28)
    })
    it("meets recall >= 0.9 and false-positive rate <= 0.02 on the tuning half", () => {
      const metrics = measure(file)
      expect(metrics.recall).toBeGreaterThanOrEqual(0.9)
      expect(metrics.falsePositiveRate).toBeLessThanOrEqual(0.02)
    })
  })

  describe(`${detector} detector, held-out corpus`, () => {
    it("stays above the floors measured when the half was first scored", () => {
      const file = loadCorpus(detector, "held-out")
      const metrics = measure(file)
      expect(file.cases.filter((c) => c.expect).length).toBeGreaterThanOrEqual(28)
      expect(file.cases.filter((c) => !c.expect).length).toBeGreaterThanOrEqual(28)
      expect(metrics.recall).toBeGreaterThanOrEqual(HELD_OUT_FLOORS[detector].recall)
      expect(metrics.falsePositiveRate).toBeLessThanOrEqual(HELD_OUT_FLOORS[detector].falsePositiveRate)
    })
  })
}
