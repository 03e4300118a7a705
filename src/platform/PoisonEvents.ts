/**
 * What makes one event, rather than the infrastructure, the reason a consumer
 * batch fails, and how such an event is made storable in `dead_letters`:
 *   - a delivery whose event id is missing or not a UUID (a Kafka message
 *     without our `event-id` header) cannot be deduped nor dead-lettered under
 *     its own id; it gets one derived from where it was read (log, topic,
 *     partition, offset), the same on every re-read;
 *   - a PostgreSQL data exception (SQLSTATE class 22, e.g. a NUL character in
 *     text, a number out of range) or integrity violation (class 23, e.g. the
 *     event's workspace was deleted meanwhile) or an exceeded program limit
 *     (class 54, e.g. a value too long for an index row) follows the event's
 *     content: retrying it never ends. Connection loss, timeouts, deadlocks and the
 *     like are other classes and keep holding the partition.
 */
import { Cause, Chunk } from "effect"
import { createHash } from "node:crypto"
import type { Delivery } from "./EventLog.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Deterministic UUID-shaped id of the record at this position of this log. */
const positionalId = (delivery: Delivery) => {
  const hex = createHash("sha256")
    .update(`${delivery.source.kind}\u0000${delivery.source.logId}\u0000${delivery.source.physicalTopic}`)
    .update(`\u0000${delivery.partition}\u0000${delivery.offset}`)
    .digest("hex")
  // Version 8 (custom) and the RFC 4122 variant, so PostgreSQL's uuid type and any UUID parser accept it.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/**
 * The deliveries with a usable event id, and the reasons of those that had
 * none (keyed by the id given to them): they are dead-lettered, not applied.
 */
export const withEventIds = (batch: ReadonlyArray<Delivery>) => {
  const invalid = new Map<string, string>()
  const deliveries = batch.map((delivery) => {
    if (UUID.test(delivery.eventId)) return delivery
    const eventId = positionalId(delivery)
    invalid.set(
      eventId,
      delivery.eventId === ""
        ? "no event-id header"
        : `event-id header is not a UUID: ${JSON.stringify(delivery.eventId.slice(0, 100))}`
    )
    return { ...delivery, eventId }
  })
  return { deliveries, invalid }
}

/** PostgreSQL text cannot hold NUL: kept visible as U+FFFD so the rest of the value can be stored. */
export const storableText = (text: string) => text.replace(/\u0000/g, "\uFFFD")

/**
 * A delivery's headers as jsonb text. jsonb refuses the `\u0000` escape that JSON.stringify writes for a NUL
 * (a binary header of another producer holds them), so names and values are made storable first.
 */
export const storableHeaders = (headers: Readonly<Record<string, string>> | undefined) =>
  JSON.stringify(
    Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [storableText(name), storableText(value)]))
  )

const sqlStateOf = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const { _tag, cause } = error as { _tag?: unknown; cause?: unknown }
  if (_tag !== "SqlError" || typeof cause !== "object" || cause === null) return undefined
  const code = (cause as { code?: unknown }).code
  return typeof code === "string" ? code : undefined
}

/** The SQLSTATE and message of a failure the event's content caused (class 22, 23 or 54), if this is one. */
export const eventDataError = (cause: Cause.Cause<unknown>): string | undefined => {
  const errors = [...Chunk.toReadonlyArray(Cause.failures(cause)), ...Chunk.toReadonlyArray(Cause.defects(cause))]
  // Any other failure in the same cause (a lost connection) keeps the batch held.
  if (errors.some((error) => !/^(22|23|54)/.test(sqlStateOf(error) ?? ""))) return undefined
  const first = errors[0]
  if (first === undefined) return undefined
  const { cause: pgError } = first as { cause: { message?: unknown } }
  return `${sqlStateOf(first)}: ${String(pgError.message ?? "database rejected the event")}`
}
