/** Code-unit helpers: buffers the views are built in, turned into strings natively; letter classes. */
const utf16 = new TextDecoder("utf-16le")

export const codesToString = (codes: Uint16Array, length: number) => utf16.decode(codes.subarray(0, length))

export const isAsciiLetter = (code: number) => (code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a
export const isLatinLetter = (code: number) =>
  isAsciiLetter(code) || (code >= 0xc0 && code <= 0x24f && code !== 0xd7 && code !== 0xf7)
/** Letters of the scripts confusables come from (Latin, Greek, Cyrillic). */
export const isFoldableLetter = (code: number) => isLatinLetter(code) || (code >= 0x370 && code <= 0x52f)
