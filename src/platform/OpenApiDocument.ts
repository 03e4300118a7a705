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
