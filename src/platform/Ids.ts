/** Time-ordered identifiers (UUIDv7, RFC 9562) and random capability tokens. */
import { randomBytes, randomFillSync } from "node:crypto"

let lastMillis = 0
let sequence = 0

// Random bytes drawn from a pooled buffer: one randomFillSync per 256 ids
// instead of a system call for each (ids are minted several times per decision).
const POOL_SIZE = 16 * 256
const pool = Buffer.alloc(POOL_SIZE)
let poolOffset = POOL_SIZE
const randomSlice = (length: number): Buffer => {
  if (poolOffset + length > POOL_SIZE) {
    randomFillSync(pool)
    poolOffset = 0
  }
  const slice = Buffer.from(pool.subarray(poolOffset, poolOffset + length))
  poolOffset += length
  return slice
}

/** A UUIDv7: 48-bit Unix milliseconds, then a 12-bit counter and random bits, so ids sort by creation time. */
export const uuidv7 = (): string => {
  const now = Date.now()
  if (now === lastMillis) {
    sequence = (sequence + 1) & 0xfff
  } else {
    lastMillis = now
    sequence = randomSlice(2).readUInt16BE(0) & 0x7ff
  }
  const bytes = randomSlice(16)
  bytes.writeUIntBE(now, 0, 6)
  bytes[6] = 0x70 | (sequence >> 8)
  bytes[7] = sequence & 0xff
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = bytes.toString("hex")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** A prefixed, time-ordered id such as `run_0193...`. */
export const prefixedId = (prefix: string): string => `${prefix}_${uuidv7().replaceAll("-", "")}`

/** A URL-safe random token with `bytes` bytes of entropy. */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString("base64url")
