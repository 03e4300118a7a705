// Verifies a decision receipt in the browser: the compact JWS (EdDSA over Ed25519, RFC 7515) of
// GET /v1/receipts/{id}, checked with WebCrypto against the key of GET /.well-known/jwks.json
// named by the JWS header's kid, and its payload compared with the trace shown.

const decoder = new TextDecoder()

function base64urlBytes(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=")
  const binary = atob(base64)
  return Uint8Array.from(binary, (c) => c.charCodeAt(0))
}

const decodeJson = (part) => JSON.parse(decoder.decode(base64urlBytes(part)))

/**
 * {verified, reason, claims}: verified only when the signature checks out with the published
 * key and the signed claims name this trace with its effect.
 */
export async function verifyReceipt(jws, jwks, expected) {
  const parts = typeof jws === "string" ? jws.split(".") : []
  if (parts.length !== 3) return { verified: false, reason: "The receipt is not a compact JWS." }
  let header
  let claims
  try {
    header = decodeJson(parts[0])
    claims = decodeJson(parts[1])
  } catch {
    return { verified: false, reason: "The receipt's header or payload is not JSON." }
  }
  if (header.alg !== "EdDSA") return { verified: false, reason: `Unexpected algorithm ${header.alg}.`, claims }
  const jwk = (jwks.keys ?? []).find((key) => key.kid === header.kid)
  if (!jwk) return { verified: false, reason: `No published key has the id ${header.kid}.`, claims }
  if (!(globalThis.crypto && crypto.subtle)) {
    return { verified: false, reason: "This browser offers WebCrypto only over https or on localhost.", claims }
  }
  let valid
  try {
    const key = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" }, false, ["verify"])
    const signed = new TextEncoder().encode(`${parts[0]}.${parts[1]}`)
    valid = await crypto.subtle.verify({ name: "Ed25519" }, key, base64urlBytes(parts[2]), signed)
  } catch (error) {
    return { verified: false, reason: `This browser cannot check Ed25519 signatures (${error.message}).`, claims }
  }
  if (!valid) return { verified: false, reason: "The signature does not match the published key.", claims }
  if (claims.trace_id !== expected.trace_id || claims.effect !== expected.effect) {
    return { verified: false, reason: "The signed receipt is for another decision.", claims }
  }
  return { verified: true, reason: `Signed by ${header.kid}; checked in this browser.`, claims }
}
