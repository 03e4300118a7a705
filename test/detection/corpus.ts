/** Loads the detector corpus (test/fixtures/detectors) and measures a detector on one half of it. */
import { readFileSync } from "node:fs"
import { detect, type DetectorName, type DetectorOptions } from "../../src/detection/index.js"

export type Half = "tuning" | "held-out"

export interface CorpusCase {
  readonly id: string
  readonly group: string
  readonly expect: boolean
  readonly text: string
  readonly note: string
  readonly category?: string
}

export interface CorpusFile<Name extends DetectorName> {
  readonly detector: Name
  readonly half: Half
  readonly options?: DetectorOptions[Name]
  readonly cases: ReadonlyArray<CorpusCase>
}

export const loadCorpus = <Name extends DetectorName>(detector: Name, half: Half): CorpusFile<Name> =>
  JSON.parse(
    readFileSync(new URL(`../fixtures/detectors/${detector}.${half}.json`, import.meta.url), "utf8")
  ) as CorpusFile<Name>

/** Whether the detector, with the file's options, reports what the case expects (a finding of its category, or none). */
export const outcome = <Name extends DetectorName>(file: CorpusFile<Name>, testCase: CorpusCase) => {
  const findings = detect(file.detector, testCase.text, file.options)
  const reported =
    testCase.category === undefined
      ? findings.length > 0
      : findings.some((finding) => finding.category === testCase.category)
  return { findings, reported, correct: testCase.expect ? reported : findings.length === 0 }
}

export interface Metrics {
  readonly positives: number
  readonly negatives: number
  readonly recall: number
  readonly precision: number
  readonly falsePositiveRate: number
  readonly missed: ReadonlyArray<string>
  readonly falseAlarms: ReadonlyArray<string>
}

export const measure = <Name extends DetectorName>(file: CorpusFile<Name>): Metrics => {
  let truePositives = 0
  let falsePositives = 0
  const missed: Array<string> = []
  const falseAlarms: Array<string> = []
  for (const testCase of file.cases) {
    const { correct } = outcome(file, testCase)
    if (testCase.expect && correct) truePositives++
    else if (testCase.expect) missed.push(testCase.id)
    else if (!correct) {
      falsePositives++
      falseAlarms.push(testCase.id)
    }
  }
  const positives = file.cases.filter((c) => c.expect).length
  const negatives = file.cases.length - positives
  return {
    positives,
    negatives,
    recall: truePositives / positives,
    precision: truePositives + falsePositives === 0 ? 1 : truePositives / (truePositives + falsePositives),
    falsePositiveRate: falsePositives / negatives,
    missed,
    falseAlarms
  }
}
