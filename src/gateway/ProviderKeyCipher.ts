/**
 * Provider API keys at rest: AES-256-GCM under a key derived (SHA-256) from
 * GATEWAY_ENCRYPTION_KEY, or from a secret generated once under
 * DATA_DIR/secrets/gateway-encryption-key (mode 0600). Each ciphertext is
 * bound to its workspace and connection (additional authenticated data), so
 * a row copied elsewhere does not decrypt. Stored form: `v1:` + base64 of
 * iv (12 bytes) | tag (16 bytes) | ciphertext.
 */
import { Effect, Option, Redacted } from "effect"
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import { AppConfig } from "../platform/Config.js"
import { persistedRandomSecret } from "../platform/Secrets.js"

const FILE = "gateway-encryption-key"

const aadOf = (workspaceId: string, connectionId: string) => Buffer.from(`${workspaceId}/${connectionId}`, "utf8")

export class ProviderKeyCipher extends Effect.Service<ProviderKeyCipher>()("gateway/ProviderKeyCipher", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const secret = Option.isSome(config.gatewayEncryptionKey)
      ? Redacted.value(config.gatewayEncryptionKey.value)
      : yield* persistedRandomSecret(config.dataDir, FILE)
    const key = createHash("sha256").update(secret, "utf8").digest()

    const encrypt = (workspaceId: string, connectionId: string, plaintext: Redacted.Redacted<string>) => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", key, iv)
      cipher.setAAD(aadOf(workspaceId, connectionId))
      const body = Buffer.concat([cipher.update(Redacted.value(plaintext), "utf8"), cipher.final()])
      return `v1:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`
    }

    /** The plaintext, or none when this key cannot open it (rotated key, tampered row). */
    const decrypt = (
      workspaceId: string,
      connectionId: string,
      stored: string
    ): Option.Option<Redacted.Redacted<string>> => {
      if (!stored.startsWith("v1:")) return Option.none()
      const raw = Buffer.from(stored.slice(3), "base64")
      if (raw.length < 28) return Option.none()
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12))
        decipher.setAAD(aadOf(workspaceId, connectionId))
        decipher.setAuthTag(raw.subarray(12, 28))
        const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")
        return Option.some(Redacted.make(text))
      } catch {
        return Option.none()
      }
    }

    return { encrypt, decrypt }
  })
}) {}
