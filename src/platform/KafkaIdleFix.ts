/**
 * Works around kafkajs 2.2.4's request-queue timer loop (tulios/kafkajs#1556,
 * #1704; fix proposed in #1667, unreleased): with nothing pending and no
 * broker throttling, `scheduleCheckPendingRequests` sets a timeout with a
 * negative delay whose callback schedules the next one, so every broker
 * connection spins a ~1 ms timer forever. With a dozen connections (producer,
 * admin, one consumer per group) that cost 10-15% of a core at idle, and more
 * under load. The replacement schedules a check only when there is something
 * to check: pending requests, or a throttle to wait out.
 */
import { createRequire } from "node:module"

const CHECK_PENDING_REQUESTS_INTERVAL = 10

interface RequestQueueState {
  throttledUntil: number
  readonly pending: { readonly length: number }
  throttleCheckTimeoutId: ReturnType<typeof setTimeout> | null
  checkPendingRequests(): void
}

function scheduleCheckPendingRequests(this: RequestQueueState) {
  if (this.throttleCheckTimeoutId) return
  const untilUnthrottled = this.throttledUntil - Date.now()
  const delay =
    this.pending.length > 0
      ? untilUnthrottled > 0
        ? untilUnthrottled
        : CHECK_PENDING_REQUESTS_INTERVAL
      : untilUnthrottled > 0
        ? untilUnthrottled
        : undefined
  if (delay === undefined) return // nothing pending, not throttled: the next push or response checks again
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null
    this.checkPendingRequests()
  }, delay)
}

let applied = false

/** Patches kafkajs's RequestQueue once per process (the module is shared with kafkajs through require's cache). */
export const applyKafkaIdleFix = () => {
  if (applied) return
  applied = true
  const requestQueue: unknown = createRequire(import.meta.url)("kafkajs/src/network/requestQueue/index.js")
  if (typeof requestQueue === "function" && typeof requestQueue.prototype === "object" && requestQueue.prototype !== null) {
    Object.defineProperty(requestQueue.prototype, "scheduleCheckPendingRequests", {
      value: scheduleCheckPendingRequests,
      writable: true,
      configurable: true
    })
  }
}
