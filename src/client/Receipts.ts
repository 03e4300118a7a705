/**
 * Offline verification of a decision's receipt: a compact JWS (EdDSA) whose
 * payload is the decision's canonical JSON, checked against the service's
 * keys (`GET /.well-known/jwks.json`) with jose, so a tool can hold a
 * decision it did not make itself to account.
 */
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from "jose"

/** The public keys of `GET /.well-known/jwks.json`. */
export interface Jwks {
  readonly keys: ReadonlyArray<Readonly<Record<string, unknown>>>
}

/** What a receipt attests to (its signed payload). */
export interface ReceiptClaims {
  readonly receipt_id: string
  readonly trace_id: string
  readonly intent_id: string
  readonly workspace_id: string
  readonly agent_id: string
  readonly environment_id: string
  readonly effect: "permit" | "deny" | "defer" | "rewrite"
  readonly findings: ReadonlyArray<{
    readonly id: string
    readonly policy_id: string | null
    readonly effect: string
  }>
  readonly transformed_value: unknown
  readonly issued_at: string
}

/** A receipt that does not verify: bad signature, unknown key, or a payload that is not a receipt. */
export class ReceiptVerificationError extends Error {
  override readonly name = "ReceiptVerificationError"
}

const RECEIPT_TYPE = "guardrail-receipt+jws"

const isClaims = (value: unknown): value is ReceiptClaims =>
  typeof value === "object" &&
  value !== null &&
  ["receipt_id", "trace_id", "intent_id", "workspace_id", "effect", "issued_at"].every(
    (field) => typeof (value as Record<string, unknown>)[field] === "string"
  ) &&
  Array.isArray((value as Record<string, unknown>)["findings"])

/**
 * Verifies a receipt (its compact JWS, or an object carrying it as `jws`) against `jwks`; answers what it
 * attests to, or rejects with a `ReceiptVerificationError`.
 */
export const verifyReceipt = async (receipt: string | { readonly jws: string }, jwks: Jwks): Promise<ReceiptClaims> => {
  const jws = typeof receipt === "string" ? receipt : receipt.jws
  let payload: Uint8Array
  try {
    const verified = await compactVerify(jws, createLocalJWKSet(jwks as JSONWebKeySet), { algorithms: ["EdDSA"] })
    if (verified.protectedHeader.typ !== RECEIPT_TYPE) throw new Error(`typ is not ${RECEIPT_TYPE}`)
    payload = verified.payload
  } catch (error) {
    throw new ReceiptVerificationError(
      `The receipt does not verify: ${error instanceof Error ? error.message : String(error)}`
    )
  }
  let claims: unknown
  try {
    claims = JSON.parse(new TextDecoder().decode(payload))
  } catch {
    throw new ReceiptVerificationError("The receipt's payload is not JSON.")
  }
  if (!isClaims(claims)) throw new ReceiptVerificationError("The receipt's payload is not a decision receipt.")
  return claims
}
