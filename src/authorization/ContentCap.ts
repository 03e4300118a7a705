/**
 * The cap on text matched against policies. An event whose `content`, or any string in its
 * `params`, is over `MAX_MATCH_CONTENT_BYTES` is refused whole (413) before any policy looks at
 * it: matching only a prefix would let padding carry text past a deny, and matching the whole
 * of an unbounded text would let one event hold the event loop.
 */
import { PayloadTooLarge } from "../http/Errors.js"

interface Action {
  readonly content?: string | undefined
  readonly params?: unknown
}

/** UTF-8 length over the cap; counted only when the UTF-16 length alone cannot settle it. */
const overCap = (text: string, maxBytes: number) =>
  text.length * 3 > maxBytes && (text.length > maxBytes || Buffer.byteLength(text, "utf8") > maxBytes)

/** A visited JSON value with the way back to its root, so a path is built only for the one reported. */
interface Visit {
  readonly value: unknown
  readonly key: string
  readonly parent: Visit | null
}

const pathOf = (visit: Visit): string => {
  const keys: Array<string> = []
  for (let at: Visit | null = visit; at !== null; at = at.parent) keys.push(at.key)
  return keys.reverse().join(".")
}

/**
 * The policy target (`content`, `params.a.0`) of the first text over the cap, or null. Walks
 * params without recursion: a deeply nested body must not overflow the stack.
 */
export const oversizedTarget = (action: Action, maxBytes: number): string | null => {
  if (action.content !== undefined && overCap(action.content, maxBytes)) return "content"
  if (action.params === undefined) return null
  const pending: Array<Visit> = [{ value: action.params, key: "params", parent: null }]
  for (let visit = pending.pop(); visit !== undefined; visit = pending.pop()) {
    const { value } = visit
    if (typeof value === "string") {
      if (overCap(value, maxBytes)) return pathOf(visit)
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push({ value: value[i], key: String(i), parent: visit })
    } else if (typeof value === "object" && value !== null) {
      for (const [key, item] of Object.entries(value)) pending.push({ value: item, key, parent: visit })
    }
  }
  return null
}

export const contentTooLarge = (target: string, maxBytes: number) => {
  const message = `${target} is over the ${maxBytes}-byte cap on text matched against policies; nothing was matched.`
  return new PayloadTooLarge({
    code: "content_too_large",
    message,
    details: [
      { path: `action.${target}`, message: `target ${target} exceeds ${maxBytes} bytes (MAX_MATCH_CONTENT_BYTES)` }
    ]
  })
}
