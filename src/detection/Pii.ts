/**
 * Personal data: e-mail addresses, phone numbers, payment cards (Luhn),
 * IBANs (mod 97), US social security numbers, IP addresses and street
 * addresses, found in the raw text, its folded view (fullwidth digits,
 * homoglyphs, zero-width characters) and its decoded spans.
 */
import { isIPv6 } from "node:net"
import { digitsOf } from "./Checksums.js"
import { cardSpans, ibanSpans } from "./Financial.js"
import { eachMatch, FindingSet } from "./Findings.js"
import { type TextViews, viewsOf } from "./Normalize.js"
import type { Finding, TextView } from "./Types.js"

export const PII_CATEGORIES = ["email", "phone", "card", "iban", "ssn", "ip", "address"] as const
export type PiiCategory = (typeof PII_CATEGORIES)[number]

export interface PiiOptions {
  /** Only these categories (all when absent). */
  readonly categories?: ReadonlyArray<PiiCategory>
}

// Every pattern starts at a token boundary (a lookbehind), so a failed attempt costs at most one token.
const EMAIL_DOMAIN = /[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-])/y
const DEFANGED_EMAIL =
  /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}\s?[[(]\s?at\s?[\])]\s?[A-Za-z0-9-]{1,63}(?:\s?[[(]\s?dot\s?[\])]\s?[A-Za-z0-9-]{1,63}){1,4}/gi
const DEFANGED_AT = /at\s?[\])]/i
const PHONE =
  /(?<![\w+-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{1,5}(?:[ .-]\d{2,6}){1,5}(?![\w-])|(?<![\w+])\+\d{8,15}(?!\w)|(?<![\w+])\(\d{1,4}\)[ .-]?\d{2,5}(?:[ .-]\d{2,6}){0,4}(?!\w)|(?<![\w+.,])\d{10,11}(?![\w.,])/g
const DATE_LIKE = /^\d{4}[-./ ]\d{1,2}[-./ ]\d{1,2}$|^\d{1,2}[-./ ]\d{1,2}[-./ ]\d{4}$/
const SSN_SHAPED = /^\d{3}([- ])\d{2}\1\d{4}$/
const PHONE_WORD =
  /(?:phone|tel|call|mobile|cell|whatsapp|fax|number|n[uú]mero|telefon|t[eé]l[eé]phone|телефон|номер|電話|电话|手机|फ़ोन|फोन|नंबर|هاتف|رقم)\W{0,3}$/i
const SSN = /(?<![\w-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\w-])/g
const SSN_WORD = /(?:ssn|social security(?: number)?|ss#)\W{0,4}$/i
const SSN_COMPACT = /(?<!\w)(?!000|666|9\d\d)\d{3}(?!00)\d{2}(?!0000)\d{4}(?!\w)/g
const IPV4 = /(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\w|\.\d)/g
/** Two colons with hex digits between or a "::": the least an IPv6 address has. */
const IPV6_HINT = /::|[0-9A-Fa-f]:[0-9A-Fa-f]{1,4}:/
const VERSION_WORD = /(?:\bv|version|ver\.?|build|release|rev\.?)\s*$/i
const IPV6_CANDIDATE = /(?<![\w:.])\[?(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%[A-Za-z0-9]{1,16})?(?![\w:])/g
const STREET_SUFFIX =
  "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Terrace|Place|Pl|Square|Sq|Parkway|Pkwy|Highway|Hwy"
/** Each address pattern with a cheap test that the text could hold a match (its keyword followed by what must follow). */
const ADDRESSES: ReadonlyArray<readonly [RegExp, RegExp]> = [
  [
    /\d\s[A-Z]/,
    new RegExp(`(?<!\\w)\\d{1,5}[A-Za-z]?\\s(?:[A-Z][A-Za-z'.-]{0,30}\\s){0,4}(?:${STREET_SUFFIX})\\b\\.?`, "g")
  ],
  [
    /\d,?\s(?:rue|avenue|boulevard|bd|place|chemin|allée|impasse|quai)\s|\d\s?(?:bis|ter)/i,
    /(?<!\w)\d{1,4}(?:\s?(?:bis|ter))?,?\s(?:rue|avenue|boulevard|bd|place|chemin|allée|impasse|quai)\s[\p{L}'-]{2,}/giu
  ],
  [
    /(?:straße|strasse|str\.|weg|allee|platz|gasse|ring|damm)\s\d/,
    /(?<![\p{L}])\p{Lu}\p{Ll}{2,30}(?:straße|strasse|str\.|weg|allee|platz|gasse|ring|damm)\s\d{1,4}[a-z]?(?!\w)/gu
  ],
  [
    /Calle|Avenida|Avda\.|Plaza|Paseo|Camino|Carrera|Rua/,
    /(?<![\p{L}])(?:Calle|Avenida|Avda\.|Plaza|Paseo|Camino|Carrera|Rua)\s(?:[\p{L}]{2,30}\s){0,4}\d{1,4}(?!\w)/gu
  ]
]

/** A character an e-mail address's local part may hold (also what redaction scans back over from an "@"). */
export const isLocalPartCode = (code: number) =>
  (code >= 0x30 && code <= 0x39) ||
  ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a) ||
  code === 0x2e ||
  code === 0x5f ||
  code === 0x25 ||
  code === 0x2b ||
  code === 0x2d

/** E-mail addresses found from each "@": the local part scanned back, the domain matched forward (both bounded). */
const eachEmail = (text: string, report: (at: number, length: number) => void) => {
  for (let at = text.indexOf("@"); at >= 0; at = text.indexOf("@", at + 1)) {
    let start = at
    while (start > 0 && at - start < 64 && isLocalPartCode(text.charCodeAt(start - 1))) start--
    if (start === at || (start > 0 && isLocalPartCode(text.charCodeAt(start - 1)))) continue
    EMAIL_DOMAIN.lastIndex = at + 1
    const domain = EMAIL_DOMAIN.exec(text)
    if (domain !== null) report(start, at + 1 + domain[0].length - start)
  }
}

const precededBy = (view: TextView, at: number, pattern: RegExp) =>
  pattern.test(view.text.slice(Math.max(0, at - 28), at))

const MESSAGES: Record<PiiCategory, string> = {
  email: "e-mail address",
  phone: "phone number",
  card: "payment card number (Luhn-valid)",
  iban: "IBAN (checksum-valid)",
  ssn: "US social security number",
  ip: "IP address",
  address: "street address"
}

type Scanner = (view: TextView, report: (at: number, length: number) => void) => void

const scanners: Record<PiiCategory, Scanner> = {
  email: (view, report) => {
    eachEmail(view.text, report)
    if (DEFANGED_AT.test(view.text)) eachMatch(DEFANGED_EMAIL, view, (m) => report(m.index, m[0].length))
  },
  phone: (view, report) =>
    eachMatch(PHONE, view, (m) => {
      const match = m[0]
      const digits = digitsOf(match)
      if (digits.length < 7 || digits.length > 15 || DATE_LIKE.test(match) || SSN_SHAPED.test(match)) return
      // A bare run of digits is a phone number only right after a word that says so.
      if (/^\d+$/.test(match) && !precededBy(view, m.index, PHONE_WORD)) return
      report(m.index, match.length)
    }),
  // Written once with redaction (Financial.ts): a card followed by its expiry or CVV, an IBAN by its BIC.
  card: (view, report) => {
    for (const [start, end] of cardSpans(view.text)) report(start, end - start)
  },
  iban: (view, report) => {
    for (const [start, end] of ibanSpans(view.text)) report(start, end - start)
  },
  ssn: (view, report) => {
    eachMatch(SSN, view, (m) => report(m.index, m[0].length))
    eachMatch(SSN_COMPACT, view, (m) => {
      if (precededBy(view, m.index, SSN_WORD)) report(m.index, m[0].length)
    })
  },
  ip: (view, report) => {
    eachMatch(IPV4, view, (m) => {
      if (!precededBy(view, m.index, VERSION_WORD)) report(m.index, m[0].length)
    })
    if (IPV6_HINT.test(view.text)) {
      eachMatch(IPV6_CANDIDATE, view, (m) => {
        const bracketed = m[0].startsWith("[") ? 1 : 0
        const address = m[0].slice(bracketed).replace(/%.*$/, "")
        const groups = address.split(":").filter((group) => group.length > 0).length
        if (groups >= 3 && isIPv6(address)) report(m.index + bracketed, m[0].length - bracketed)
      })
    }
  },
  address: (view, report) => {
    for (const [could, pattern] of ADDRESSES)
      if (could.test(view.text)) eachMatch(pattern, view, (m) => report(m.index, m[0].length))
  }
}

/** Personal data in `input` (a raw text or its views); one finding per item, at raw offsets. */
export const detectPii = (input: string | TextViews, options: PiiOptions = {}): Array<Finding> => {
  const textViews = viewsOf(input)
  const categories = options.categories ?? PII_CATEGORIES
  const found = new FindingSet("pii")
  for (const view of textViews.literal) {
    for (const category of categories) {
      scanners[category](view, (at, length) => found.add(category, view.toRaw(at, at + length), MESSAGES[category]))
    }
  }
  return found.result()
}
