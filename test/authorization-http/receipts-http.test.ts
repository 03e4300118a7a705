/**
 * Signed receipts verified the way an outside auditor would: with nothing
 * but the public key served at `GET /.well-known/jwks.json` (no credential)
 * and jose's `compactVerify`. The signed payload names the decision's effect,
 * trace and intent; changing one byte of it breaks the signature. Receipts
 * are workspace-scoped (404 across workspaces).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, importJWK, type JWK } from "jose"
import { TIMESTAMP } from "../support/Formats.js"
import { clientAt, expectFailure, type GuardrailClient, keysOf, withRaw } from "../support/Api.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { createAgent, createPolicy, type Decision, propose, reply } from "../support/Events.js"

const AGENT = "support-bot"

interface SignedContent {
  readonly receipt_id: string
  readonly trace_id: string
  readonly intent_id: string
  readonly workspace_id: string
  readonly agent_id: string
  readonly environment_id: string
  readonly effect: string
  readonly findings: ReadonlyArray<{ id: string; policy_id: string | null; effect: string }>
  readonly transformed_value: string | null
  readonly issued_at: string
}

/** The public key set, fetched without any credential. */
const fetchJwks = (base: string) =>
  Effect.gen(function* () {
    const anonymous = yield* clientAt(base)
    const jwks = yield* anonymous.receipts.jwks()
    expect(jwks.keys.length, JSON.stringify(jwks)).toBeGreaterThan(0)
    return { keys: jwks.keys.map((key): JWK => ({ ...key })) }
  })

/** `GET /v1/receipts/{id}` through `api` (a session's or a runtime key's client). */
const fetchReceipt = (api: GuardrailClient, id: string) =>
  Effect.gen(function* () {
    const { body, value: receipt } = yield* withRaw(api.receipts.getReceipt({ path: { id }, withResponse: true }))
    expect(keysOf(body)).toEqual(["created_at", "jws", "policy_set_digest", "receipt_id", "trace_id"])
    expect(receipt.created_at).toMatch(TIMESTAMP)
    return receipt
  })

const verify = (jws: string, jwks: { keys: Array<JWK> }) =>
  Effect.tryPromise(async () => {
    const { payload, protectedHeader } = await compactVerify(jws, createLocalJWKSet(jwks))
    return { content: JSON.parse(new TextDecoder().decode(payload)) as SignedContent, protectedHeader }
  })

/** The JWS with one byte of its payload changed (decoded, flipped, re-encoded). */
const tamperPayload = (jws: string, edit: (payload: Buffer) => Buffer) => {
  const [header, payload, signature] = jws.split(".")
  return [header, edit(Buffer.from(payload!, "base64url")).toString("base64url"), signature].join(".")
}

layer(testServer("database"), SERVER_OPTIONS)("receipts (database event log)", (it) => {
  describe("GET /.well-known/jwks.json", () => {
    it.effect("serves only public Ed25519 keys, without a credential", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const jwks = yield* fetchJwks(base)
        for (const key of jwks.keys) {
          expect(key).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" })
          expect(typeof key.kid).toBe("string")
          expect(typeof key.x).toBe("string")
          expect(key).not.toHaveProperty("d")
          // Each key imports as a public key.
          const imported = yield* Effect.promise(() => importJWK(key, "EdDSA"))
          expect((imported as { type?: string }).type).toBe("public")
        }
      })
    )
  })

  describe("verification with only the JWKS", () => {
    it.effect("each decision's receipt verifies; its payload names the decision's effect, trace and intent", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        yield* createPolicy(base, owner, "mask-darn", { action: "rewrite", value: "darn" })
        const jwks = yield* fetchJwks(base)

        const decisions: Array<Decision> = [
          yield* propose(base, owner, AGENT, reply("Your order ships tomorrow.")),
          yield* propose(base, owner, AGENT, reply("I promise a full refund.")),
          yield* propose(base, owner, AGENT, reply("Ask a lawyer.")),
          yield* propose(base, owner, AGENT, reply("darn it"))
        ]
        expect(decisions.map((decision) => decision.effect)).toEqual(["permit", "deny", "defer", "rewrite"])

        for (const decision of decisions) {
          const receipt = yield* fetchReceipt(owner.api, decision.receipt_id)
          expect(receipt.receipt_id).toBe(decision.receipt_id)
          expect(receipt.trace_id).toBe(decision.trace_id)

          const header = decodeProtectedHeader(receipt.jws)
          expect(header.alg).toBe("EdDSA")
          expect(jwks.keys.map((key) => key.kid)).toContain(header.kid)

          const { content } = yield* verify(receipt.jws, jwks)
          expect(content.effect).toBe(decision.effect)
          expect(content.trace_id).toBe(decision.trace_id)
          expect(content.intent_id).toBe(decision.intent_id)
          expect(content.receipt_id).toBe(decision.receipt_id)
          expect(content.workspace_id).toBe(owner.workspaceId)
          expect(content.agent_id).toBe(AGENT)
          expect(content.environment_id).toBe(owner.defaultEnvironmentId)
          expect(content.transformed_value).toBe(decision.transformed_value)
          expect(content.findings).toEqual(
            decision.findings.map((finding) => ({
              id: finding.id,
              policy_id: finding.policy_id,
              effect: finding.effect
            }))
          )
          expect(Number.isNaN(Date.parse(content.issued_at))).toBe(false)
        }
      })
    )

    it.effect("changing one byte of the payload (or of the signature) makes verification fail", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const decision = yield* propose(base, owner, AGENT, reply("I promise a full refund."))
        expect(decision.effect).toBe("deny")
        const jwks = yield* fetchJwks(base)
        const receipt = yield* fetchReceipt(owner.api, decision.receipt_id)
        // The untouched receipt verifies.
        yield* verify(receipt.jws, jwks)

        // "deny" -> "deny" with one letter changed: same length, one byte different.
        const forged = tamperPayload(receipt.jws, (payload) => {
          const text = payload.toString("utf8")
          const at = text.indexOf('"effect":"deny"') + '"effect":"'.length
          expect(at).toBeGreaterThan(9)
          const copy = Buffer.from(payload)
          copy[at] = "D".charCodeAt(0)
          return copy
        })
        expect(forged).not.toBe(receipt.jws)
        const forgedResult = yield* Effect.either(verify(forged, jwks))
        expect(forgedResult._tag).toBe("Left")

        // Every single-byte flip of the payload is caught.
        const payloadLength = Buffer.from(receipt.jws.split(".")[1]!, "base64url").length
        for (const index of [0, Math.floor(payloadLength / 2), payloadLength - 1]) {
          const flipped = tamperPayload(receipt.jws, (payload) => {
            const copy = Buffer.from(payload)
            copy[index] = copy[index]! ^ 0x01
            return copy
          })
          expect((yield* Effect.either(verify(flipped, jwks)))._tag).toBe("Left")
        }

        const [header, payload, signature] = receipt.jws.split(".")
        const signatureBytes = Buffer.from(signature!, "base64url")
        signatureBytes[0] = signatureBytes[0]! ^ 0x80
        const badSignature = [header, payload, signatureBytes.toString("base64url")].join(".")
        expect((yield* Effect.either(verify(badSignature, jwks)))._tag).toBe("Left")
      })
    )
  })

  describe("GET /v1/receipts/{id}", () => {
    it.effect("another workspace's receipt is 404; an unknown id is 404; no credential is 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const stranger = yield* tenant(base)
        const decision = yield* propose(base, owner, AGENT, reply("hello"))
        yield* expectFailure(stranger.api.receipts.getReceipt({ path: { id: decision.receipt_id } }), 404)
        yield* expectFailure(owner.api.receipts.getReceipt({ path: { id: "rcpt_missing" } }), 404)
        const anonymous = yield* clientAt(base)
        yield* expectFailure(anonymous.receipts.getReceipt({ path: { id: decision.receipt_id } }), 401)
        // The owner still reads it, and so does the workspace's runtime key.
        yield* fetchReceipt(owner.api, decision.receipt_id)
        const key = yield* createKey(owner)
        yield* fetchReceipt(yield* keyClient(base, key), decision.receipt_id)
      })
    )
  })
})
