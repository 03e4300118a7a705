// The console's session and API access: the JWT from POST /v1/auth/login kept in sessionStorage
// (this tab only), the password's SHA-256 digest the API expects, and JSON calls to this origin.

const SESSION_KEY = "guardrail.dashboard.session"

export const session = {
  get() {
    try {
      const value = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? "null")
      return value && typeof value.jwt === "string" ? value : null
    } catch {
      return null
    }
  },
  set(value) { sessionStorage.setItem(SESSION_KEY, JSON.stringify(value)) },
  clear() { sessionStorage.removeItem(SESSION_KEY) }
}

// crypto.subtle exists only in secure contexts (https or localhost), so a small implementation
// covers plain http on other hosts.
export async function sha256Hex(text) {
  const bytes = new TextEncoder().encode(text)
  if (globalThis.crypto && crypto.subtle) {
    const digest = await crypto.subtle.digest("SHA-256", bytes)
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("")
  }
  return sha256Fallback(bytes)
}

export function sha256Fallback(bytes) {
  const k = []
  const h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
  for (let n = 2, found = 0; found < 64; n++) {
    let prime = true
    for (let d = 2; d * d <= n; d++) if (n % d === 0) { prime = false; break }
    if (prime) k[found++] = (Math.cbrt(n) % 1) * 2 ** 32 | 0
  }
  const length = bytes.length
  const padded = new Uint8Array(((length + 9 + 63) >> 6) << 6)
  padded.set(bytes)
  padded[length] = 0x80
  const view = new DataView(padded.buffer)
  view.setUint32(padded.length - 8, Math.floor(length / 2 ** 29))
  view.setUint32(padded.length - 4, (length << 3) >>> 0)
  const w = new Array(64)
  const rotr = (x, n) => (x >>> n) | (x << (32 - n))
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + i * 4)
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3)
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10)
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0
    }
    let [a, b, c, d, e, f, g, hh] = h
    for (let i = 0; i < 64; i++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i]) | 0
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0
      hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0
    }
    h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0
    h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + hh) | 0
  }
  return h.map((x) => (x >>> 0).toString(16).padStart(8, "0")).join("")
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** Called with a message when the service rejects the session (set by the page shell). */
let onSessionEnded = () => {}
export const whenSessionEnds = (handler) => { onSessionEnded = handler }

/** One JSON call to this origin with the session's bearer token; a non-2xx answer throws ApiError. */
export async function api(method, path, body) {
  const headers = { accept: "application/json" }
  const current = session.get()
  if (current) headers.authorization = `Bearer ${current.jwt}`
  if (body !== undefined) headers["content-type"] = "application/json"
  let response
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  } catch {
    throw new ApiError(0, "network_error", "The service could not be reached.")
  }
  const text = await response.text()
  let parsed = null
  try { parsed = text === "" ? null : JSON.parse(text) } catch { parsed = null }
  if (!response.ok) {
    const error = parsed && parsed.error ? parsed.error : {}
    // Only the session the request was sent with ends (a late answer to an earlier one leaves a newer one be).
    if (response.status === 401 && path !== "/v1/auth/login" && current && session.get()?.jwt === current.jwt) {
      session.clear()
      onSessionEnded("Your session ended; sign in again.")
    }
    throw new ApiError(response.status, error.code ?? "http_" + response.status, error.message ?? `HTTP ${response.status}`)
  }
  return parsed
}

/** A query string of the defined, non-empty values. */
export function query(params) {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, String(value))
  }
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}
