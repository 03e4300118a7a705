/** Idempotency keys: the request header and the errors of a key that cannot be answered. */
import { Schema } from "effect"
import { Conflict, Unprocessable } from "../http/Errors.js"

export const IDEMPOTENCY_HEADER = "idempotency-key"

/** An `Idempotency-Key` value: 1-255 visible ASCII characters (a UUID fits). */
export const IdempotencyKey = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(255),
  Schema.pattern(/^[\x21-\x7e]+$/, { message: () => "Expected 1-255 visible ASCII characters" })
).annotations({
  description:
    "Extension: a repeat with the same key within 24 h answers the first result and writes nothing (per workspace)."
})

/** How long a key answers its first result. */
export const IDEMPOTENCY_WINDOW_HOURS = 24

export const keyReused = () =>
  new Unprocessable({
    code: "idempotency_key_reused",
    message: "This Idempotency-Key was used within 24 hours for a different request; send a new key."
  })

export const keyInFlight = () =>
  new Conflict({
    code: "idempotency_key_in_flight",
    message: "A request with this Idempotency-Key is still being processed; retry shortly."
  })
