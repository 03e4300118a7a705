/**
 * Check digits and randomness measures that tell real identifiers and
 * secrets from look-alikes. Pure functions over ASCII strings.
 */

/** Luhn (ISO/IEC 7812) over a string of digits. */
export const luhnValid = (digits: string) => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      digit *= 2
      if (digit > 9) digit -= 9
    }
    sum += digit
  }
  return sum % 10 === 0
}

/**
 * ISO 13616 for every prefix of `compact` at once: `valid[n]` is 1 when its first n characters are an IBAN (the
 * first four moved to the end, letters as numbers, the whole mod 97 is 1). The account part's remainder is
 * carried from one length to the next, so all lengths cost one pass, not one each (an IBAN's end is looked
 * for by trying each length: Financial.ts).
 */
export const ibanPrefixesValid = (compact: string): Uint8Array => {
  const valid = new Uint8Array(compact.length + 1)
  // The first four characters appended to a remainder r give (r * 10^digits + head) mod 97.
  let head = 0
  let headScale = 1
  for (let i = 0; i < 4 && i < compact.length; i++) {
    const code = compact.charCodeAt(i)
    if (code >= 48 && code <= 57) {
      head = (head * 10 + code - 48) % 97
      headScale = (headScale * 10) % 97
    } else if (code >= 65 && code <= 90) {
      head = (head * 100 + code - 55) % 97
      headScale = (headScale * 100) % 97
    } else return valid
  }
  let remainder = 0
  for (let i = 4; i < compact.length; i++) {
    const code = compact.charCodeAt(i)
    if (code >= 48 && code <= 57) remainder = (remainder * 10 + code - 48) % 97
    else if (code >= 65 && code <= 90) remainder = (remainder * 100 + code - 55) % 97
    else return valid
    if ((remainder * headScale + head) % 97 === 1) valid[i + 1] = 1
  }
  return valid
}

/** Shannon entropy in bits per character. */
export const entropy = (value: string) => {
  const counts = new Map<number, number>()
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i)
    counts.set(code, (counts.get(code) ?? 0) + 1)
  }
  let bits = 0
  for (const count of counts.values()) {
    const p = count / value.length
    bits -= p * Math.log2(p)
  }
  return bits
}

/** Digits of a string, in order. */
export const digitsOf = (value: string) => value.replace(/\D/g, "")
