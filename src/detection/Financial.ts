/**
 * Payment card numbers (Luhn) and IBANs (mod 97) as spans of a text, written once for the `pii` detector
 * (Pii.ts) and for redaction (src/privacy/Redaction.ts). Both scans are linear in the text: a card is looked
 * for in each run of digit groups, an IBAN from each country code and check digits.
 */
import { ibanPrefixesValid, luhnValid } from "./Checksums.js"

/** `[start, end)` in the text. */
export type TextSpan = readonly [number, number]

/** Where an IBAN may start: country code and check digits, not inside a word. */
const IBAN_START = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?=[ ]?[A-Z0-9])/g
/** The longest account part an IBAN can have (11-30 characters, optionally in space-separated groups). */
const IBAN_BODY = /(?:[ ]?[A-Z0-9]){11,30}/y
/** Groups of digits joined by single spaces or dashes, not inside a word or a decimal: where cards are looked for. */
const DIGIT_RUN = /(?<![\w.])\d+(?:[ -]\d+)*(?!\w)/g
const isAlphanumeric = (code: number) =>
  (code >= 0x30 && code <= 0x39) || ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a)

/**
 * IBANs passing the mod-97 check, the longest that ends with a word: "DE89... BIC COBADEFF" or "... 00 EUR" keep
 * the IBAN's end where the account part could run on into the next words.
 */
export const ibanSpans = (text: string): Array<TextSpan> => {
  const spans: Array<TextSpan> = []
  IBAN_START.lastIndex = 0
  for (let start = IBAN_START.exec(text); start !== null; start = IBAN_START.exec(text)) {
    IBAN_BODY.lastIndex = start.index + 4
    if (IBAN_BODY.exec(text) === null) continue
    // Each place the account part could end (before a space or a non-alphanumeric), longest first.
    const compact = text.slice(start.index, IBAN_BODY.lastIndex).replace(/ /g, "")
    const valid = ibanPrefixesValid(compact)
    let length = compact.length
    for (let end = IBAN_BODY.lastIndex; length >= 15; end--) {
      const code = text.charCodeAt(end - 1)
      if (code === 0x20) continue
      if (!isAlphanumeric(text.charCodeAt(end)) && valid[length] === 1) {
        spans.push([start.index, end])
        IBAN_START.lastIndex = end
        break
      }
      length--
    }
  }
  return spans
}

/**
 * Where a card number is in a run of digit groups: 13-19 digits passing Luhn, either the whole run or consecutive
 * groups of 4-6 digits (or one long group), so a card followed by its expiry or CVV ("4111 1111 1111 1111 123")
 * or after a short number is still found; the longest such window from the leftmost group that has one.
 */
const cardSpansInRun = (run: string, offset: number): Array<TextSpan> => {
  const groups = [...run.matchAll(/\d+/g)].map((match) => ({ start: match.index, text: match[0] }))
  const spans: Array<TextSpan> = []
  for (let first = 0; first < groups.length;) {
    let digits = ""
    let shaped = true
    let last = -1
    for (let next = first; next < groups.length && digits.length + groups[next]!.text.length <= 19; next++) {
      const group = groups[next]!.text
      digits += group
      shaped &&= group.length >= 4 && group.length <= 6
      const whole = first === 0 && next === groups.length - 1
      if (digits.length >= 13 && (whole || shaped || next === first) && luhnValid(digits)) last = next
      if (!shaped && first > 0) break // only the whole run may mix other group sizes
    }
    if (last < 0) {
      first++
      continue
    }
    const end = groups[last]!
    spans.push([offset + groups[first]!.start, offset + end.start + end.text.length])
    first = last + 1
  }
  return spans
}

/** Card numbers in `text`: 13-19 digits passing Luhn, not one digit repeated (`0000 0000 0000 0000`). */
export const cardSpans = (text: string): Array<TextSpan> => {
  const spans: Array<TextSpan> = []
  DIGIT_RUN.lastIndex = 0
  for (let run = DIGIT_RUN.exec(text); run !== null; run = DIGIT_RUN.exec(text)) {
    if (run[0].length >= 13) spans.push(...cardSpansInRun(run[0], run.index))
  }
  return spans.filter(([start, end]) => !/^(\d)\1+$/.test(text.slice(start, end).replace(/\D/g, "")))
}
