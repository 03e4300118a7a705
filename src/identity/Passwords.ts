/**
 * Password storage. Clients send the SHA-256 hex digest of the plaintext;
 * the server treats that digest as the secret and keeps only a salted scrypt
 * hash of it, with the parameters recorded in the hash so they can be raised
 * later without breaking existing users.
 */
import { Effect } from "effect"
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"

const PARAMS = { N: 16384, r: 8, p: 1, keyLength: 32 } as const

const derive = (secret: string, salt: Buffer, N: number, r: number, p: number, keyLength: number) =>
  Effect.async<Buffer>((resume) => {
    scrypt(secret, salt, keyLength, { N, r, p, maxmem: 256 * N * r }, (error, key) =>
      resume(error === null ? Effect.succeed(key) : Effect.die(error))
    )
  })

/** `scrypt$N$r$p$salt$hash`, base64url parts. */
export const hashPassword = (digest: string) =>
  Effect.gen(function* () {
    const salt = randomBytes(16)
    const key = yield* derive(digest.toLowerCase(), salt, PARAMS.N, PARAMS.r, PARAMS.p, PARAMS.keyLength)
    return ["scrypt", PARAMS.N, PARAMS.r, PARAMS.p, salt.toString("base64url"), key.toString("base64url")].join("$")
  })

/** Compares in constant time; a malformed stored hash never matches. */
export const verifyPassword = (digest: string, stored: string) =>
  Effect.gen(function* () {
    const [scheme, N, r, p, salt, hash] = stored.split("$")
    if (scheme !== "scrypt" || salt === undefined || hash === undefined) return false
    const expected = Buffer.from(hash, "base64url")
    const actual = yield* derive(
      digest.toLowerCase(),
      Buffer.from(salt, "base64url"),
      Number(N),
      Number(r),
      Number(p),
      expected.length
    )
    return actual.length === expected.length && timingSafeEqual(actual, expected)
  })

/** A hash of a random secret: verifying against it costs the same as a real check, so unknown users take as long. */
export const decoyHash = hashPassword(randomBytes(32).toString("hex")).pipe(Effect.cached, Effect.runSync)
