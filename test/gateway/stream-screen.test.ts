/**
 * The stream screener (src/gateway/StreamScreen.ts) alone, over a fake
 * decision: whatever the chunking, no part of a denied pattern of up to the
 * hold length is released, the text is released in windows and in order,
 * and a rewrite replaces the pending text.
 */
import { describe, expect, it } from "@effect/vitest"
import { PassThrough, Readable } from "node:stream"
import type { Screened } from "../../src/gateway/GuardrailTexts.js"
import { screenStream, type Verdict } from "../../src/gateway/StreamScreen.js"

const chatChunk = (content: string) =>
  `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`

/** Runs the screener over `text` sent in pieces of `size`; answers the text released and whether it was stopped. */
const run = async (text: string, size: number, decide: (screened: Screened) => Verdict) => {
  const pieces = text.match(new RegExp(`[\\s\\S]{1,${size}}`, "g")) ?? []
  const source = Readable.from([...pieces.map(chatChunk), "data: [DONE]\n\n"].map((event) => Buffer.from(event)))
  const sink = new PassThrough()
  const out: Array<Buffer> = []
  sink.on("data", (chunk: Buffer) => out.push(chunk))
  const decided: Array<string> = []
  await screenStream(source, sink, {
    dialect: "chat",
    windowChars: 20,
    holdChars: 10,
    screensText: true,
    screensToolCalls: true,
    decide: async (screened) => {
      decided.push(screened.content ?? "")
      return decide(screened)
    },
    maxEventBytes: 4096,
    finalEvent: () => `event: guardrail\ndata: {"decided":${decided.length}}\n\n`
  })
  const events = Buffer.concat(out)
    .toString("utf8")
    .split("\n\n")
    .filter((event) => event.trim() !== "")
  const ended = events.at(-1)?.startsWith("event: guardrail") === true
  const released = events.flatMap((event) => {
    if (event.startsWith("event: guardrail")) return []
    const data = event.replace(/^\s*data: /, "")
    if (data === "[DONE]") return []
    const parsed = JSON.parse(data) as { choices?: Array<{ delta: { content?: string } }>; error?: { code: string } }
    return parsed.error !== undefined ? [] : [parsed.choices?.[0]?.delta.content ?? ""]
  })
  return { released, stopped: events.some((event) => event.includes("guardrail_denied")), decided, ended }
}

const denyStupid = (screened: Screened): Verdict =>
  screened.content?.includes("stupid") === true
    ? { _tag: "stop", event: `\n\ndata: ${JSON.stringify({ error: { code: "guardrail_denied" } })}\n\n` }
    : { _tag: "pass", rewritten: null }

describe("stream screening", () => {
  it("never releases any part of a denied pattern, whatever the chunking", async () => {
    const text = "One sentence here. Another one follows now, and then a stupid remark appears at last."
    for (const size of [1, 2, 3, 5, 7, 11, 40]) {
      const { released, stopped, ended } = await run(text, size, denyStupid)
      expect(stopped, `chunks of ${size}`).toBe(true)
      expect(ended, `a refused stream ends with its error, chunks of ${size}`).toBe(false)
      const joined = released.join("")
      expect(text.startsWith(joined), `chunks of ${size}`).toBe(true)
      expect(joined.includes("stu"), `chunks of ${size}: ${joined}`).toBe(false)
    }
  })

  it("releases all the text, in order and in windows, when nothing objects", async () => {
    const text = "Short. A longer sentence without an end for a while and on and on"
    const { released, stopped, decided, ended } = await run(text, 3, () => ({ _tag: "pass", rewritten: null }))
    expect(stopped).toBe(false)
    expect(ended).toBe(true)
    expect(released.join("")).toBe(text)
    expect(released.length).toBeGreaterThan(1)
    expect(released.length).toBe(decided.length)
  })

  it("a rewrite releases the transformed pending text", async () => {
    const text = "Your key is sk-live-123 so keep it safe please."
    const { released } = await run(text, 4, (screened) =>
      screened.content?.includes("sk-live-123") === true
        ? { _tag: "pass", rewritten: screened.content.replace("sk-live-123", "[key]") }
        : { _tag: "pass", rewritten: null }
    )
    expect(released.join("")).toBe(text.replace("sk-live-123", "[key]"))
  })
})
