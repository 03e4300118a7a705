/**
 * A strict call's worst-case prompt (Proxy.ts, docs/gateway.md "Budget
 * admission"): the request body's bytes bound the prompt it carries, but a
 * part that names content by reference (an image URL, a file id) is read and
 * billed by the provider without being in the body, so each counts a fixed
 * number of tokens.
 */

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Whether `part` names content by reference: an image URL (not a `data:` URL), a file id, or a `url` source. */
const isReference = (part: Record<string, unknown>) => {
  const image = part["image_url"]
  const url = isRecord(image) ? image["url"] : image
  return (
    (typeof url === "string" && !url.startsWith("data:")) ||
    typeof part["file_id"] === "string" ||
    (part["type"] === "url" && typeof part["url"] === "string")
  )
}

/**
 * The parts of a provider request that name content by reference (chat `image_url` with a URL, `file` with a
 * `file_id`; messages `image` / `document` with a `url` or `file` source, in tool results too): the provider
 * reads and bills them, and their size is not in the request body.
 */
export const referencedParts = (body: unknown): number => {
  let count = 0
  const visit = (value: unknown, depth: number): void => {
    if (depth > 64) return
    if (Array.isArray(value)) for (const item of value) visit(item, depth + 1)
    else if (isRecord(value)) {
      if (isReference(value)) count++
      else for (const key in value) visit(value[key], depth + 1)
    }
  }
  visit(body, 0)
  return count
}

/**
 * A strict call's worst-case prompt tokens: every prompt token is at least one byte of the request body, so
 * its size bounds the prompt, plus `tokensPerReference` for each part naming content by reference.
 */
export const promptBound = (body: unknown, bodyBytes: number, tokensPerReference: number) =>
  bodyBytes + referencedParts(body) * tokensPerReference
