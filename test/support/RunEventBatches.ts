/** Numbered `run-events` messages spread over `keys` keys, for tests of the event plumbing itself. */
import { randomUUID } from "node:crypto"
import { Topics } from "../../src/platform/Topics.js"

export const runEventBatch = (count: number, tag: string, keys: number) =>
  Array.from({ length: count }, (_, i) => ({
    eventId: randomUUID(),
    topic: Topics.runEvents,
    key: `${tag}-${i % keys}`,
    value: JSON.stringify({ schema_version: 1, i })
  }))
