/**
 * The places in an MCP message that hold text (text blocks, embedded text
 * resources, string fields), read in order for one decision and written
 * back after a rewrite: the decision screens them one part a line, and a
 * rewritten text goes back part by part when its lines still match.
 */
import { asObject } from "./Screening.js"

type Json = Record<string, unknown>

/** A place that holds text: read, and written back in the same order. */
export interface TextSlot {
  readonly text: string
  readonly write: (text: string) => void
}

/** `object[field]` when it is a string. */
export const fieldSlot = (object: Json | undefined, field: string): ReadonlyArray<TextSlot> => {
  const text = object?.[field]
  return object !== undefined && typeof text === "string"
    ? [{ text, write: (written) => (object[field] = written) }]
    : []
}

/** A message content (one block or, with tools, a list): its blocks, those inside tool results included. */
export const blocksOf = (content: unknown): ReadonlyArray<unknown> => {
  const blocks = Array.isArray(content) ? content : [content]
  return blocks.flatMap((block) => {
    const object = asObject(block)
    return object?.["type"] === "tool_result" && Array.isArray(object["content"]) ? object["content"] : [block]
  })
}

/** The text of content blocks: text blocks and embedded text resources (binary blocks carry none). */
export const textSlots = (blocks: ReadonlyArray<unknown>): ReadonlyArray<TextSlot> =>
  blocks.flatMap((block) => {
    const object = asObject(block)
    if (object?.["type"] === "text") return fieldSlot(object, "text")
    return object?.["type"] === "resource" ? fieldSlot(asObject(object["resource"]), "text") : []
  })

/** The text blocks of a list of messages (`{role, content}`), in order. */
export const messageSlots = (messages: unknown): ReadonlyArray<TextSlot> =>
  Array.isArray(messages) ? messages.flatMap((message) => textSlots(blocksOf(asObject(message)?.["content"]))) : []

/** The slots' text as one decision screens it: one part a line. */
export const slotText = (slots: ReadonlyArray<TextSlot>) => slots.map((slot) => slot.text).join("\n")

const lineCount = (text: string) => text.split("\n").length

/**
 * Writes a rewritten text back. When it has as many lines as the screened text, each part gets its own
 * lines back; otherwise the parts cannot be told apart again, and the whole text goes to the first part
 * and the others are emptied, so nothing unscreened is left.
 */
export const rewriteSlots = (slots: ReadonlyArray<TextSlot>, transformed: string) => {
  const lines = transformed.split("\n")
  if (lines.length === slots.reduce((total, slot) => total + lineCount(slot.text), 0)) {
    let next = 0
    for (const slot of slots) {
      const count = lineCount(slot.text)
      slot.write(lines.slice(next, next + count).join("\n"))
      next += count
    }
  } else slots.forEach((slot, index) => slot.write(index === 0 ? transformed : ""))
}
