/**
 * HttpApi always declares its built-in `HttpApiDecodeError`; the request
 * pipeline answers decode failures with the conventions' `ErrorBody`
 * instead, so the generated document must not advertise the built-in shape.
 */
const DECODE_ERROR_REF = "#/components/schemas/HttpApiDecodeError"

type Json = Record<string, unknown>

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

const valuesOf = (value: unknown): ReadonlyArray<Json> => (isRecord(value) ? Object.values(value).filter(isRecord) : [])

export const withOnlyErrorBody = (document: Json): Json => {
  for (const operations of valuesOf(document["paths"])) {
    for (const operation of valuesOf(operations)) {
      for (const response of valuesOf(operation["responses"])) {
        const content = response["content"]
        const media = isRecord(content) ? content["application/json"] : undefined
        if (!isRecord(media) || !isRecord(media["schema"]) || !Array.isArray(media["schema"]["anyOf"])) continue
        const rest = media["schema"]["anyOf"].filter(
          (schema) => !(isRecord(schema) && schema["$ref"] === DECODE_ERROR_REF)
        )
        media["schema"] = rest.length === 1 ? rest[0] : { ...media["schema"], anyOf: rest }
      }
    }
  }
  const components = document["components"]
  if (isRecord(components) && isRecord(components["schemas"])) delete components["schemas"]["HttpApiDecodeError"]
  return document
}

/** Who may call an operation's group (src/identity/Access.ts), as the document describes it. */
export interface DocumentedAccess {
  readonly runtimeKey: "none" | "read" | "all"
  readonly read: string
  readonly write: string
  readonly endpoints?: Readonly<Record<string, string>>
}

export interface DocumentationOptions {
  /** The access table, by group. */
  readonly access: Readonly<Record<string, DocumentedAccess>>
  /** Error statuses an operation (`group.endpoint`) or a whole group answers beyond the ones its shape implies. */
  readonly extraStatuses: Readonly<Record<string, ReadonlyArray<number>>>
  /** Summaries, by operation, where the name in words reads badly. */
  readonly summaries: Readonly<Record<string, string>>
  /** Request headers an operation reads itself (outside its declared schema), as OpenAPI header parameters. */
  readonly headers?: Readonly<Record<string, ReadonlyArray<Json>>>
}

const ACRONYMS: Readonly<Record<string, string>> = {
  api: "API",
  llm: "LLM",
  mcp: "MCP",
  jwks: "JWKS",
  html: "HTML",
  oauth: "OAuth"
}

/** `listApiKeys` -> `List API keys`: the operation's summary when it declares none. */
export const summaryOf = (endpoint: string) => {
  const words = endpoint
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(" ")
    .map((word) => ACRONYMS[word.toLowerCase()] ?? word.toLowerCase())
  const text = words.join(" ")
  return text.charAt(0).toUpperCase() + text.slice(1)
}

const isWrite = (method: string) => method !== "get" && method !== "head"

const credentialSentence = (
  operation: Json,
  method: string,
  group: string,
  endpoint: string,
  options: DocumentationOptions
) => {
  const security = Array.isArray(operation["security"]) ? operation["security"].filter(isRecord) : []
  if (security.length === 0) return undefined
  if (security.some((scheme) => "internalKey" in scheme)) return "Credential: the internal key (INTERNAL_API_KEY) only."
  const access = options.access[group]
  if (access === undefined) return "Credential: a user session of an owner."
  const role = access.endpoints?.[endpoint] ?? (isWrite(method) ? access.write : access.read)
  const keys = access.runtimeKey === "all" || (access.runtimeKey === "read" && !isWrite(method))
  return `Credential: a user session (role ${role} or above)${keys ? " or a workspace runtime key" : "; runtime keys are refused (403)"}.`
}

/**
 * The error statuses an operation can answer: 400 when it takes parameters or a body, 401/403/404 when it needs a
 * credential (404 also for a path naming a missing resource), 409 for writes, 413/415 with a body, 500 (a
 * server fault such as a lost database, never the input: test/http/no-server-errors.test.ts calls every
 * operation to hold that) and 503 (shutting down) always, plus the operation's or group's own extras.
 */
const statusesOf = (
  operation: Json,
  method: string,
  group: string,
  endpoint: string,
  options: DocumentationOptions
) => {
  const parameters = Array.isArray(operation["parameters"]) ? operation["parameters"].filter(isRecord) : []
  const hasBody = isRecord(operation["requestBody"])
  const secured = Array.isArray(operation["security"]) && operation["security"].length > 0
  const statuses = new Set([500, 503])
  if (parameters.length > 0 || hasBody) statuses.add(400)
  if (secured) [401, 403, 404].forEach((status) => statuses.add(status))
  if (parameters.some((parameter) => parameter["in"] === "path")) statuses.add(404)
  if (isWrite(method)) statuses.add(409)
  if (hasBody) [413, 415].forEach((status) => statuses.add(status))
  for (const extra of [
    ...(options.extraStatuses[group] ?? []),
    ...(options.extraStatuses[`${group}.${endpoint}`] ?? [])
  ])
    statuses.add(extra)
  return statuses
}

/** A request body schema's `examples` (annotated on the payload Schema), offered by Swagger UI as named examples. */
const liftExamples = (operation: Json, document: Json) => {
  const body = operation["requestBody"]
  const content = isRecord(body) && isRecord(body["content"]) ? body["content"] : undefined
  for (const media of valuesOf(content)) {
    let schema = media["schema"]
    const ref = isRecord(schema) && typeof schema["$ref"] === "string" ? schema["$ref"] : undefined
    if (ref !== undefined) {
      const components = document["components"]
      const schemas = isRecord(components) && isRecord(components["schemas"]) ? components["schemas"] : {}
      schema = schemas[ref.split("/").at(-1) ?? ""]
    }
    const examples = isRecord(schema) && Array.isArray(schema["examples"]) ? schema["examples"] : []
    if (examples.length === 0) continue
    const named: Record<string, { summary: string; value: unknown }> = {}
    examples.forEach((value, index) => {
      // Named after what the example is (an event's kind and operation) when it says, else by its position.
      const action = isRecord(value) && isRecord(value["action"]) ? value["action"]["operation"] : undefined
      const kind = isRecord(value) ? value["kind"] : undefined
      const parts = [kind, action].filter((part): part is string => typeof part === "string")
      const name = parts.length === 0 ? `Example ${index + 1}` : parts.join(": ")
      named[name in named ? `${name} (${index + 1})` : name] = { summary: name, value }
    })
    media["examples"] = named
  }
}

/**
 * Every operation documented: a summary (its name in words, unless declared), a description (its own, else its
 * group's, with the credential it needs), only the error statuses it can answer, and its body's examples.
 */
export const documented =
  (options: DocumentationOptions) =>
  (document: Json): Json => {
    const tags = Array.isArray(document["tags"]) ? document["tags"].filter(isRecord) : []
    const tagDescription = (name: unknown) => tags.find((tag) => tag["name"] === name)?.["description"]
    for (const operations of valuesOf(document["paths"])) {
      for (const [method, operation] of Object.entries(operations)) {
        if (!isRecord(operation)) continue
        const [group = "", endpoint = ""] = String(operation["operationId"] ?? "").split(".")
        if (typeof operation["summary"] !== "string" || operation["summary"] === "")
          operation["summary"] = options.summaries[`${group}.${endpoint}`] ?? summaryOf(endpoint)
        const own = typeof operation["description"] === "string" ? operation["description"] : undefined
        const groupText = Array.isArray(operation["tags"]) ? tagDescription(operation["tags"][0]) : undefined
        const credential = credentialSentence(operation, method, group, endpoint, options)
        operation["description"] = [
          own ?? (typeof groupText === "string" ? groupText : `${operation["summary"]}.`),
          credential
        ]
          .filter((part) => part !== undefined)
          .join("\n\n")
        const statuses = statusesOf(operation, method, group, endpoint, options)
        const responses = operation["responses"]
        if (isRecord(responses)) {
          for (const status of Object.keys(responses)) {
            if (Number(status) >= 400 && !statuses.has(Number(status))) delete responses[status]
          }
        }
        const headers = options.headers?.[`${group}.${endpoint}`] ?? []
        if (headers.length > 0) {
          const parameters = Array.isArray(operation["parameters"]) ? operation["parameters"] : []
          operation["parameters"] = [...parameters, ...headers.map((header) => ({ in: "header", ...header }))]
        }
        liftExamples(operation, document)
      }
    }
    return document
  }
