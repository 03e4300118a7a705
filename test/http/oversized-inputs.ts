/**
 * Oversized and unstorable inputs generated from JSON Schemas (the OpenAPI
 * document's request bodies, the policy and agent-profile documents): a valid
 * minimal body per schema, every field path reachable in it, and the hostile
 * values the bounds must refuse at each path.
 */

export type JsonSchema = Record<string, unknown>
export type Segment = string | number
export type Resolve = (schema: unknown) => JsonSchema

export const MEGABYTE_STRING = "x".repeat(1_000_000)

// Nested arrays, not objects: an object's unknown keys are ignored by the schemas, an array never is.
const deepArray = (depth: number): unknown => (depth === 0 ? 1 : [deepArray(depth - 1)])

export interface HostileValue {
  readonly name: string
  /** The value, given the schema of the field it goes to. */
  readonly value: (field?: JsonSchema) => unknown
}

const manyKeys = () => Object.fromEntries(Array.from({ length: 10_000 }, (_, index) => [`k${index}`, 0]))

/**
 * What every field gets, one at a time: a 1 MB string (or one character over the field's own cap when
 * that is larger, e.g. a knowledge file), 100,000 items, 10,000 keys, 40-level nesting, a NUL character.
 */
export const HOSTILE_VALUES: ReadonlyArray<HostileValue> = [
  {
    name: "1 MB string",
    value: (field) => {
      const cap = Number(field?.["maxLength"] ?? 0)
      return cap >= MEGABYTE_STRING.length ? "x".repeat(cap + 1) : MEGABYTE_STRING
    }
  },
  { name: "100,000-item array", value: () => new Array<number>(100_000).fill(0) },
  { name: "10,000-key object", value: manyKeys },
  { name: "40-level nesting", value: () => deepArray(40) },
  { name: "NUL character", value: () => "a\u0000b" }
]

/** What a body without declared fields gets as a whole (the body-level caps; deeper than the body's 64 levels). */
export const WHOLE_BODY_VALUES: ReadonlyArray<HostileValue> = [
  { name: "100,000-item array", value: () => new Array<number>(100_000).fill(0) },
  { name: "10,000-key object", value: manyKeys },
  { name: "100-level nesting", value: () => deepArray(100) }
]

/** A schema resolver over `components.schemas` (OpenAPI) or `$defs` (JSON Schema). */
export const resolverOf =
  (definitions: Record<string, unknown>): Resolve =>
  (schema) => {
    let current = (typeof schema === "object" && schema !== null ? schema : {}) as JsonSchema
    for (let hops = 0; typeof current["$ref"] === "string" && hops < 10; hops++) {
      const name = (current["$ref"] as string).split("/").pop()!
      current = (definitions[name] ?? {}) as JsonSchema
    }
    return current
  }

const alternatives = (schema: JsonSchema): ReadonlyArray<unknown> =>
  ["anyOf", "oneOf", "allOf"].flatMap((key) => (Array.isArray(schema[key]) ? (schema[key] as Array<unknown>) : []))

/** The first alternative that is not `null` (NullOr, optional unions). */
const mainAlternative = (schema: JsonSchema, resolve: Resolve): JsonSchema => {
  const options = alternatives(schema).map(resolve)
  return options.find((option) => option["type"] !== "null") ?? schema
}

const properties = (schema: JsonSchema) =>
  (typeof schema["properties"] === "object" && schema["properties"] !== null ? schema["properties"] : {}) as Record<
    string,
    unknown
  >

const STRING_CANDIDATES = ["bounds-probe", "a".repeat(64), "2026-11-22T10:00:00.000Z", "a@example.com", "1", "x"]

const baseString = (schema: JsonSchema, name: string): string => {
  if (/email/.test(name)) return "a@example.com"
  const examples = schema["examples"]
  if (Array.isArray(examples) && typeof examples[0] === "string") return examples[0]
  const pattern = typeof schema["pattern"] === "string" ? new RegExp(schema["pattern"]) : undefined
  const fits = (text: string) =>
    (pattern === undefined || pattern.test(text)) &&
    text.length >= Number(schema["minLength"] ?? 0) &&
    text.length <= Number(schema["maxLength"] ?? Infinity)
  return STRING_CANDIDATES.find(fits) ?? "x"
}

/** A field's schema, when `path` reaches one. */
export const fieldSchema = (raw: unknown, path: ReadonlyArray<Segment>, resolve: Resolve): JsonSchema => {
  let schema = resolve(raw)
  for (const segment of path) schema = resolve(childSchema(schema, segment, resolve).child)
  return alternatives(schema).length > 0 && schema["type"] === undefined ? mainAlternative(schema, resolve) : schema
}

/** A minimal valid value of `schema`: required fields only, first enum members, smallest numbers. */
export const baseValue = (raw: unknown, resolve: Resolve, depth = 0, name = ""): unknown => {
  const schema = resolve(raw)
  if (depth > 8) return null
  if (Array.isArray(schema["enum"])) return schema["enum"][0]
  if ("const" in schema) return schema["const"]
  if (alternatives(schema).length > 0 && schema["type"] === undefined) {
    return baseValue(mainAlternative(schema, resolve), resolve, depth + 1, name)
  }
  switch (schema["type"]) {
    case "string":
      return baseString(schema, name)
    case "integer":
    case "number":
      return Number(
        schema["minimum"] ?? (schema["exclusiveMinimum"] === undefined ? 1 : Number(schema["exclusiveMinimum"]) + 1)
      )
    case "boolean":
      return true
    case "array":
      return Number(schema["minItems"] ?? 0) > 0 ? [baseValue(schema["items"], resolve, depth + 1)] : []
    case "object": {
      const required = Array.isArray(schema["required"]) ? (schema["required"] as Array<string>) : []
      const fields = properties(schema)
      return Object.fromEntries(required.map((field) => [field, baseValue(fields[field], resolve, depth + 1, field)]))
    }
    default:
      return {}
  }
}

/** Every field path below `schema` (properties, first array items, one free-form key), up to `maxDepth` segments. */
export const fieldPaths = (
  raw: unknown,
  resolve: Resolve,
  prefix: ReadonlyArray<Segment> = [],
  maxDepth = 5
): ReadonlyArray<ReadonlyArray<Segment>> => {
  if (prefix.length >= maxDepth) return []
  const schema = resolve(raw)
  const options = alternatives(schema).length > 0 ? alternatives(schema).map(resolve) : [schema]
  const paths: Array<ReadonlyArray<Segment>> = []
  for (const option of options) {
    if (option["type"] === "array" && option["items"] !== undefined) {
      paths.push(...fieldPaths(option["items"], resolve, [...prefix, 0], maxDepth))
    }
    for (const [name, child] of Object.entries(properties(option))) {
      const path = [...prefix, name]
      paths.push(path, ...fieldPaths(child, resolve, path, maxDepth))
    }
    const extra = option["additionalProperties"]
    if (typeof extra === "object" && extra !== null) paths.push([...prefix, "extra_key"])
  }
  const seen = new Set<string>()
  return paths.filter((path) => {
    const key = JSON.stringify(path)
    return !seen.has(key) && seen.add(key) !== undefined
  })
}

/** The option of `schema` that has `segment` (a property, or array items). */
const childSchema = (raw: unknown, segment: Segment, resolve: Resolve): { parent: JsonSchema; child: unknown } => {
  const schema = resolve(raw)
  const options = alternatives(schema).length > 0 ? alternatives(schema).map(resolve) : [schema]
  for (const option of options) {
    if (typeof segment === "number" && option["type"] === "array") return { parent: option, child: option["items"] }
    if (typeof segment === "string" && segment in properties(option)) {
      return { parent: option, child: properties(option)[segment] }
    }
    if (typeof segment === "string" && typeof option["additionalProperties"] === "object") {
      return { parent: option, child: option["additionalProperties"] }
    }
  }
  return { parent: schema, child: {} }
}

const LEAF_MARKER = "\u0001leaf\u0001"
const hostileTexts = new Map<string, string>()

/**
 * The JSON text of the minimal valid value of `schema` with `hostile` (sized for the field's schema) at
 * `path`. The hostile value's own text is made once and spliced in: stringifying a megabyte per probe
 * would cost the suite more than the requests it makes.
 */
export const bodyWith = (
  raw: unknown,
  path: ReadonlyArray<Segment>,
  hostile: HostileValue,
  field: JsonSchema,
  resolve: Resolve
): string => {
  const key = `${hostile.name}:${String(field["maxLength"] ?? "")}`
  let text = hostileTexts.get(key)
  if (text === undefined) {
    text = JSON.stringify(hostile.value(field))
    hostileTexts.set(key, text)
  }
  const spliced = text
  return JSON.stringify(valueWith(raw, path, LEAF_MARKER, resolve)).replace(JSON.stringify(LEAF_MARKER), () => spliced)
}

/** The minimal valid value of `schema` with `leaf` put at `path`. */
export const valueWith = (raw: unknown, path: ReadonlyArray<Segment>, leaf: unknown, resolve: Resolve): unknown => {
  if (path.length === 0) return leaf
  const [head, ...rest] = path
  const { parent, child } = childSchema(raw, head!, resolve)
  if (typeof head === "number") return [valueWith(child, rest, leaf, resolve)]
  const base = baseValue(parent, resolve)
  return { ...(typeof base === "object" && base !== null ? base : {}), [head!]: valueWith(child, rest, leaf, resolve) }
}
