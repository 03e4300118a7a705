/** Checks on client JSON before it reaches PostgreSQL. */

const MAX_JSON_DEPTH = 64

/**
 * JSON that PostgreSQL cannot store (text with NUL characters or lone
 * surrogates) or that nests absurdly deep is refused up front, with the path
 * of the first offending value, rather than failing later in the database.
 */
export const unstorableJson = (value: unknown, path = "", depth = 0): { path: string; message: string } | undefined => {
  if (typeof value === "string") return unstorableText(value, path)
  if (typeof value !== "object" || value === null) return undefined
  if (depth >= MAX_JSON_DEPTH) return { path, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }
  for (const [key, child] of Object.entries(value)) {
    const childPath = path === "" ? key : `${path}.${key}`
    const problem = unstorableText(key, childPath) ?? unstorableJson(child, childPath, depth + 1)
    if (problem !== undefined) return problem
  }
  return undefined
}

const unstorableText = (text: string, path: string) =>
  text.includes("\u0000")
    ? { path, message: "contains a NUL character" }
    : text.isWellFormed()
      ? undefined
      : { path, message: "contains an unpaired surrogate (not valid Unicode)" }
