/**
 * Signed decision receipts: a compact JWS (EdDSA, Ed25519) over the
 * decision's canonical content, verifiable offline with the public key from
 * `GET /.well-known/jwks.json`. The private key comes from
 * RECEIPT_SIGNING_KEY (a JWK) or is generated once under
 * DATA_DIR/secrets/receipt-signing-key.jwk.
 */
import { Effect, Option, Redacted } from "effect"
import type { JWK } from "jose"
import { createPrivateKey, generateKeyPairSync, type JsonWebKeyInput, sign as signBytes } from "node:crypto"
import { AppConfig } from "../platform/Config.js"
import { persistedSecretFile } from "../platform/Secrets.js"

const base64url = (text: string) => Buffer.from(text, "utf8").toString("base64url")

/** JSON with object keys sorted at every level, so equal content signs equally. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_, item: unknown) =>
    item !== null && typeof item === "object" && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item
  )

/** The persisted signing key; when two processes (or two signers in one process) start together, one key wins. */
const loadOrCreateKey = (dataDir: string) =>
  Effect.sync(
    (): JWK =>
      JSON.parse(
        persistedSecretFile(dataDir, "receipt-signing-key.jwk", () =>
          JSON.stringify(generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }))
        )
      ) as JWK
  )

export class ReceiptSigner extends Effect.Service<ReceiptSigner>()("authorization/ReceiptSigner", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const privateJwk = Option.isSome(config.receiptSigningKey)
      ? (JSON.parse(Redacted.value(config.receiptSigningKey.value)) as JWK)
      : yield* loadOrCreateKey(config.dataDir)
    const kid = `rcpt-${(privateJwk.x ?? "").slice(0, 16)}`
    // node:crypto signs Ed25519 synchronously (tens of microseconds), where WebCrypto would hop to the thread pool.
    const key = createPrivateKey({
      key: { ...privateJwk, kty: "OKP", crv: "Ed25519" } as JsonWebKeyInput["key"],
      format: "jwk"
    })
    const header = base64url(JSON.stringify({ alg: "EdDSA", kid, typ: "guardrail-receipt+jws" }))
    const { d: _private, ...publicJwk } = privateJwk
    const jwks = { keys: [{ ...publicJwk, kid, alg: "EdDSA", use: "sig" }] }

    /** A compact JWS: header.payload.signature, each base64url, signed over `header.payload` (RFC 7515). */
    const signNow = (content: unknown) => {
      const signingInput = `${header}.${base64url(canonicalJson(content))}`
      return `${signingInput}.${signBytes(null, Buffer.from(signingInput), key).toString("base64url")}`
    }

    return { signNow, jwks }
  })
}) {}
