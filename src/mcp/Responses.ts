/**
 * Which upstream message answers which request, for the MCP gateway's screens (Gateway.ts): the answer to
 * a request carries only its own response, and a tool call's error is screened as the result it stands for.
 */
import { Effect } from "effect"
import type { Screen } from "./Answer.js"
import { asObject, errorMessage } from "./Screening.js"

type Json = Record<string, unknown>

export const keepAll: Screen = () => Effect.succeed("keep")

const isResponse = (message: unknown) => {
  const object = asObject(message)
  return object !== undefined && ("result" in object || "error" in object)
}

/**
 * Responses on the GET stream, or on the answer to a notification, could only belong to a request this gateway
 * does not know (and did not screen): never passed on.
 */
export const dropResponses: Screen = (message) => Effect.succeed(isResponse(message) ? "drop" : "keep")

/**
 * The answer to request `id` may carry only its own response, once. A response with another id would reach the
 * client's request of that id unscreened (a tool result passed off as another call's): it stands as an error
 * for `id` instead, which ends this request without anything from it. Any response after the first is dropped:
 * the request has its answer, and a server repeating it would have each copy decided (and recorded) again.
 */
export const ownResponseOnly = (id: string | number, screen: Screen): Screen => {
  let answered = false
  return (message) => {
    if (!isResponse(message)) return screen(message)
    if (answered) return Effect.succeed("drop")
    answered = true
    const object = asObject(message)
    if (object?.["id"] !== id)
      return Effect.succeed({
        replace: errorMessage(
          id,
          -32603,
          "The MCP server answered this request with a response to another request; the gateway withheld it."
        )
      })
    // Every MCP result is an object; one that is not (a list, a string) is read by no screen: not passed unseen.
    if ("result" in object && asObject(object["result"]) === undefined)
      return Effect.succeed({
        replace: errorMessage(
          id,
          -32603,
          "The MCP server answered this request with a result that is not a JSON object, which the gateway cannot screen; it withheld it."
        )
      })
    return screen(message)
  }
}

/** The result of `message`, when it is the response to request `id` with a result. */
export const resultFor = (message: unknown, id: string | number): Json | undefined => {
  const object = asObject(message)
  return object !== undefined && object["id"] === id ? asObject(object["result"]) : undefined
}

/**
 * What a tool call's response gives the model to read: its result, or for an error its message and data
 * (clients and agent SDKs hand a tool error's text to the model), as an error result screened like any other.
 */
export const toolResultFor = (message: unknown, id: string | number): Json | undefined => {
  const result = resultFor(message, id)
  if (result !== undefined) return result
  const object = asObject(message)
  const raw = object !== undefined && object["id"] === id ? object["error"] : undefined
  if (raw === undefined) return undefined
  // What is not a string (an error that is no object, a message that is not text, `data`), which a client may
  // still show, is screened as its JSON.
  const error = asObject(raw)
  const said = error === undefined ? raw : error["message"]
  const texts = [
    ...(typeof said === "string" ? [said] : said === undefined ? [] : [JSON.stringify(said)]),
    ...(error?.["data"] === undefined ? [] : [JSON.stringify(error["data"])])
  ]
  return { content: [{ type: "text", text: texts.join("\n") }], isError: true }
}
