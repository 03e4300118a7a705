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

/** ISO 13616: the first four characters moved to the end, letters as numbers, the whole mod 97 is 1. */
export const ibanValid = (compact: string) => {
  const rearranged = compact.slice(4) + compact.slice(0, 4)
  let remainder = 0
  for (let i = 0; i < rearranged.length; i++) {
    const code = rearranged.charCodeAt(i)
    if (code >= 48 && code <= 57) remainder = (remainder * 10 + code - 48) % 97
    else if (code >= 65 && code <= 90) remainder = (remainder * 100 + code - 55) % 97
    else return false
  }
  return remainder === 1
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
