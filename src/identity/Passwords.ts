/**
 * Password storage. Clients send the SHA-256 hex digest of the plaintext;
 * the server treats that digest as the secret and keeps only a salted scrypt
 * hash of it. The cost comes from PASSWORD_SCRYPT_LOG_N and is recorded in
 * each hash, so hashes made under an older cost still verify and are
 * replaced on the next successful sign-in. At most PASSWORD_HASH_CONCURRENCY
 * hashes run at once; beyond that requests answer 429 at once rather than
 * queueing, so a flood of sign-ins cannot occupy every core.
 */
import { Effect } from "effect"
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { AppConfig } from "../platform/Config.js"
import { tooManyRequests } from "../http/Errors.js"

interface ScryptParams {
  readonly N: number
  readonly r: number
  readonly p: number
}

const KEY_LENGTH = 32

const derive = (secret: string, salt: Buffer, params: ScryptParams, keyLength: number) =>
  Effect.async<Buffer>((resume) => {
    // scrypt needs 128·N·r bytes; Node's default ceiling (32 MiB) is below that from N = 2^15.
    scrypt(secret, salt, keyLength, { ...params, maxmem: 256 * params.N * params.r }, (error, key) =>
      resume(error === null ? Effect.succeed(key) : Effect.die(error))
    )
  })

/** `scrypt$N$r$p$salt$hash`, base64url salt and hash; undefined when `stored` is not that. */
const parse = (stored: string) => {
  const [scheme, N, r, p, salt, hash, ...rest] = stored.split("$")
  const params = { N: Number(N), r: Number(r), p: Number(p) }
  const valid =
    scheme === "scrypt" &&
    salt !== undefined &&
    hash !== undefined &&
    rest.length === 0 &&
    Object.values(params).every((value) => Number.isSafeInteger(value) && value > 0)
  return valid ? { params, salt: Buffer.from(salt, "base64url"), hash: Buffer.from(hash, "base64url") } : undefined
}

export interface Verification {
  readonly matches: boolean
  /** True when the stored hash was made under other parameters than today's: store a fresh one. */
  readonly outdated: boolean
}

export class Passwords extends Effect.Service<Passwords>()("identity/Passwords", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const current: ScryptParams = { N: 2 ** config.passwordScryptLogN, r: 8, p: 1 }
    let running = 0

    /** Runs one hash computation if a slot is free, else fails with 429. */
    const withSlot = <A>(work: Effect.Effect<A>) =>
      Effect.acquireUseRelease(
        Effect.suspend(() => {
          if (running >= config.passwordHashConcurrency) {
            return Effect.fail(tooManyRequests(1, "The service is busy checking passwords; retry in a second."))
          }
          running++
          return Effect.void
        }),
        () => work,
        () => Effect.sync(() => running--)
      )

    const hashUnlimited = (digest: string) =>
      Effect.gen(function* () {
        const salt = randomBytes(16)
        const key = yield* derive(digest.toLowerCase(), salt, current, KEY_LENGTH)
        return ["scrypt", current.N, current.r, current.p, salt.toString("base64url"), key.toString("base64url")].join(
          "$"
        )
      })

    /** A hash of a random secret: verifying against it costs what a real check costs, so unknown users take as long. */
    const decoy = yield* Effect.cached(hashUnlimited(randomBytes(32).toString("hex")))

    const hash = Effect.fn("Passwords.hash")((digest: string) => withSlot(hashUnlimited(digest)))

    /**
     * Compares in constant time; a malformed stored hash never matches. `null`
     * (unknown user, or one without a password) is checked against the decoy.
     */
    const verify = Effect.fn("Passwords.verify")((digest: string, stored: string | null) =>
      withSlot(
        Effect.gen(function* () {
          const parsed = parse(stored ?? (yield* decoy))
          if (parsed === undefined) return { matches: false, outdated: false } satisfies Verification
          const actual = yield* derive(digest.toLowerCase(), parsed.salt, parsed.params, parsed.hash.length)
          const matches =
            stored !== null && actual.length === parsed.hash.length && timingSafeEqual(actual, parsed.hash)
          const outdated =
            parsed.params.N !== current.N ||
            parsed.params.r !== current.r ||
            parsed.params.p !== current.p ||
            parsed.hash.length !== KEY_LENGTH
          return { matches, outdated } satisfies Verification
        })
      )
    )

    return { hash, verify }
  })
}) {}
