/**
 * The usage meter over SSE chunks as a provider might cut them: a line split
 * across many chunks (even inside a UTF-8 character) is read once whole, and
 * a line longer than the bound is dropped without holding it, while the lines
 * after it are read.
 */
import { describe, expect, it } from "@effect/vitest"
import { UsageMeter } from "../../src/gateway/UsageMeter.js"

const usageLine = (prompt: number, completion: number) =>
  `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion }, note: "é" })}\n\n`

const meterOf = (maxLineBytes: number) => {
  const meter = new UsageMeter("chat", 100, maxLineBytes)
  meter.contentType("text/event-stream")
  return meter
}

describe("UsageMeter", () => {
  it("reads a usage line delivered one byte at a time", () => {
    const meter = meterOf(1024)
    for (const byte of Buffer.from(usageLine(12, 3))) meter.onChunk(Uint8Array.of(byte))
    expect(meter.finish()).toEqual({ promptTokens: 12, completionTokens: 3, complete: true, estimated: false })
    expect(meter.lineTooLong).toBe(false)
  })

  it("drops a line longer than the bound, and reads the lines after it", () => {
    const meter = meterOf(1024)
    const long = Buffer.alloc(64 * 1024, "x")
    meter.onChunk(Buffer.from("data: "))
    for (let i = 0; i < 16; i += 1) meter.onChunk(long)
    expect(meter.lineTooLong).toBe(true)
    // A usage report inside the dropped line is not read; the next line is.
    meter.onChunk(Buffer.from(`"usage":{"prompt_tokens":999}}\n\n${usageLine(5, 7)}`))
    expect(meter.finish()).toMatchObject({ promptTokens: 5, completionTokens: 7, complete: true })
  })
})

describe("UsageMeter, what providers send", () => {
  it("reads a stream whose lines end in a lone CR or CRLF", () => {
    for (const end of ["\r", "\r\n"]) {
      const meter = meterOf(1024)
      const stream = `data: ${JSON.stringify({ choices: [{ delta: { content: "hi" } }] })}${end}${end}${usageLine(8, 2).replace(/\n/g, end)}`
      for (const byte of Buffer.from(stream)) meter.onChunk(Uint8Array.of(byte))
      expect(meter.finish(), JSON.stringify(end)).toEqual({
        promptTokens: 8,
        completionTokens: 2,
        complete: true,
        estimated: false
      })
    }
  })

  it("counts token counts sent as strings of digits, and nothing else that is not a number", () => {
    const meter = meterOf(1024)
    meter.onChunk(Buffer.from(`data: {"choices":[],"usage":{"prompt_tokens":"12","completion_tokens":"3"}}\n\n`))
    expect(meter.finish()).toMatchObject({ promptTokens: 12, completionTokens: 3 })
    const odd = meterOf(1024)
    odd.onChunk(Buffer.from(`data: {"choices":[],"usage":{"prompt_tokens":"1e9","completion_tokens":"-4"}}\n\n`))
    expect(odd.finish()).toMatchObject({ promptTokens: 0, completionTokens: 0 })
  })
})
