/**
 * ROT13: a one-to-one map of letters, so the folded view's offsets stay
 * valid. Scanned only when the text looks like it holds ROT13-encoded
 * English, to spare ordinary text a pass.
 */
import { codesToString } from "./Codes.js"
import type { TextView } from "./Types.js"

const ROT13 = new Uint16Array(128).map((_, code) =>
  code >= 0x41 && code <= 0x5a
    ? ((code - 0x41 + 13) % 26) + 0x41
    : code >= 0x61 && code <= 0x7a
      ? ((code - 0x61 + 13) % 26) + 0x61
      : code
)
const rot13 = (text: string) => {
  const codes = new Uint16Array(text.length)
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    codes[i] = code < 0x80 ? ROT13[code]! : code
  }
  return codesToString(codes, codes.length)
}

export const rot13View = (folded: TextView): TextView => ({
  kind: "rot13",
  text: rot13(folded.text),
  toRaw: folded.toRaw
})

/** Frequent English words and attack words after ROT13 ("the", "and", "you", "ignore", "system", "prompt", "instruction"). */
const ROT13_MARKERS = [" gur ", " naq ", " lbh ", "vtaber", "flfgrz", "cebzcg", "vafgehpgvba", "qvfertneq"]
export const looksRot13 = (text: string) => {
  const lower = text.toLowerCase()
  return ROT13_MARKERS.some((marker) => lower.includes(marker))
}
