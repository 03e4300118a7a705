/**
 * The SSE reader both screening relays use (src/platform/SseEvents.ts):
 * whatever the chunking and line ends, the same events come out; an event
 * that never ends is reported at the bound; waiting for a slow reader
 * leaves no listener behind.
 */
import { describe, expect, it } from "@effect/vitest"
import { PassThrough } from "node:stream"
import { SseEventSplitter, writeDrained } from "../../src/platform/SseEvents.js"

const EVENTS = ['event: a\ndata: {"x":"é"}', "data: 2\ndata: 3", ": comment", 'data: {"last":"ü€"}']

/** The events read from `body` sent in pieces of `size` bytes. */
const read = (body: Buffer, size: number, bound = 1 << 20) => {
  const splitter = new SseEventSplitter(bound)
  const events: Array<string> = []
  for (let at = 0; at < body.length; at += size) {
    const chunk = splitter.push(body.subarray(at, at + size))
    if (chunk._tag === "too_long") return "too_long"
    events.push(...chunk.events)
  }
  const rest = splitter.end()
  return rest === undefined ? events : [...events, rest]
}

describe("SseEventSplitter", () => {
  it("reads the same events whatever the chunking, with LF, CRLF or lone-CR line ends", () => {
    for (const end of ["\n", "\r\n", "\r"]) {
      const body = Buffer.from(EVENTS.map((event) => event.replace(/\n/g, end) + end + end).join(""), "utf8")
      for (const size of [1, 2, 3, 5, 8, 13, body.length]) {
        expect(read(body, size), `${JSON.stringify(end)} in pieces of ${size}`).toEqual(EVENTS)
      }
    }
  })

  it("gives the last event without its blank line at the end of the body", () => {
    expect(read(Buffer.from("data: 1\n\ndata: 2\n"), 4)).toEqual(["data: 1", "data: 2"])
    expect(read(Buffer.from("data: 1\n\n\n\n"), 1)).toEqual(["data: 1"])
  })

  it("reports an event of endless short lines once it outgrows the bound, in any chunking", () => {
    const endless = Buffer.from("data: x\n".repeat(1000))
    for (const size of [1, 7, 100, endless.length])
      expect(read(endless, size, 4096), `pieces of ${size}`).toBe("too_long")
    // Events under the bound, however many, are fine.
    expect(read(Buffer.from("data: x\n\n".repeat(1000)), 7, 64)).toHaveLength(1000)
  })
})

describe("writeDrained", () => {
  it("waits for a slow reader and leaves no close or drain listener behind", async () => {
    const out = new PassThrough({ highWaterMark: 16 })
    const before = { close: out.listenerCount("close"), drain: out.listenerCount("drain") }
    const received: Array<Buffer> = []
    const reading = setInterval(() => {
      for (let chunk = out.read() as Buffer | null; chunk !== null; chunk = out.read() as Buffer | null)
        received.push(chunk)
    }, 1)
    for (let i = 0; i < 200; i++) expect(await writeDrained(out, "0123456789abcdefghij")).toBe(true)
    clearInterval(reading)
    expect(out.listenerCount("close")).toBe(before.close)
    expect(out.listenerCount("drain")).toBe(before.drain)
    out.destroy()
    expect(await writeDrained(out, "more")).toBe(false)
  })
})
