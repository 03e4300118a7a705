/**
 * Standard Webhooks (https://www.standardwebhooks.com) signing of budget
 * alert deliveries and the per-config secret (the outbound URL rule is the
 * outbound guard's, src/platform/OutboundGuard.ts).
 *
 * The secret is derived, never stored: `whsec_` + base64 of
 * HMAC-SHA256(service secret, "budget-alert-webhook/v1:" + config id + ":" +
 * salt), where the salt is a random value kept on the config row and the
 * service secret is the one that signs sessions (JWT_SECRET, or the one
 * generated under DATA_DIR). Neither a database dump nor the service secret
 * alone yields it; rotating JWT_SECRET rotates every webhook secret.
 */
import { createHmac } from "node:crypto"

const SECRET_PREFIX = "whsec_"

/** The config's signing secret as handed to the customer (`whsec_<base64 of 32 bytes>`). */
export const deriveWebhookSecret = (serviceSecret: string, configId: string, salt: string): string =>
  SECRET_PREFIX +
  createHmac("sha256", serviceSecret).update(`budget-alert-webhook/v1:${configId}:${salt}`).digest("base64")

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed by the secret's base64-decoded bytes. */
export const signWebhook = (secret: string, id: string, timestampSeconds: number, body: string): string => {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64")
  return `v1,${createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`
}

/** Delay before retry number `attempt` (1 = after the first failure): exponential with ±50% jitter, capped. */
export const retryDelayMillis = (attempt: number, baseMillis: number, random: number = Math.random()): number => {
  const exponential = Math.min(baseMillis * 2 ** (attempt - 1), 60 * 60 * 1000)
  return Math.round(exponential * (0.5 + random))
}
