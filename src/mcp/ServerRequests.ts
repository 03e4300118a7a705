/**
 * The pure parts of screening what an MCP server asks of the client: a
 * `sampling/createMessage` request (a prompt the server wants the client's
 * model to answer) and an `elicitation/create` request (a question put to
 * the user). Both carry text from the server, so they are decided like its
 * tool results; this says what text is screened, what the client receives
 * after a rewrite, and what the server is told when the request is withheld.
 */
import { asObject, errorMessage } from "./Screening.js"
import { blocksOf, fieldSlot, messageSlots, rewriteSlots, slotText, type TextSlot, textSlots } from "./TextSlots.js"

type Json = Record<string, unknown>

/** The server-to-client requests that are screened, by method, with the operation their decision names. */
const SCREENED = { "sampling/createMessage": "sampling", "elicitation/create": "elicitation" } as const

export interface ServerRequest {
  readonly id: string | number
  readonly method: keyof typeof SCREENED
  readonly params: Json
}

/** The screened server-to-client request `message` is, if it is one. */
export const serverRequestOf = (message: unknown): ServerRequest | undefined => {
  const object = asObject(message)
  const method = object?.["method"]
  const id = object?.["id"]
  if (typeof method !== "string" || !(method in SCREENED)) return undefined
  if (typeof id !== "string" && typeof id !== "number") return undefined
  return { id, method: method as ServerRequest["method"], params: asObject(object?.["params"]) ?? {} }
}

/** The part of the decision's source id that names the request: `mcp:<server>/<sampling|elicitation>`. */
export const requestSource = (request: ServerRequest) => SCREENED[request.method]

/**
 * The request's text in reading order, each slot writable on a copy: for sampling the system prompt
 * then each message's text blocks, for elicitation the message (and URL). Binary blocks carry no text.
 */
const slotsOf = (request: ServerRequest, copy: Json): ReadonlyArray<TextSlot> => {
  // A form's question, and for a URL elicitation the address the user is sent to as well.
  if (request.method === "elicitation/create") return [...fieldSlot(copy, "message"), ...fieldSlot(copy, "url")]
  return [...fieldSlot(copy, "systemPrompt"), ...messageSlots(copy["messages"])]
}

/** What the request's decision screens: its text, one part a line. */
export const requestText = (request: ServerRequest) => slotText(slotsOf(request, structuredClone(request.params)))

/**
 * The request's params after a rewrite. When the transformed text has the same lines as the screened
 * text, each part gets its own lines back; otherwise the parts cannot be told apart again, and the
 * transformed text becomes the first part (the system prompt, else the first text) and the other parts
 * are emptied, so nothing unscreened is left.
 */
export const rewrittenParams = (request: ServerRequest, transformed: string): Json => {
  const copy = structuredClone(request.params)
  rewriteSlots(slotsOf(request, copy), transformed)
  return copy
}

/** The request as the client receives it after a rewrite. */
export const rewrittenRequest = (request: ServerRequest, transformed: string) => ({
  jsonrpc: "2.0",
  id: request.id,
  method: request.method,
  params: rewrittenParams(request, transformed)
})

/** MCP's code for a request the client's side rejected (the SDKs use it for a refused sampling request). */
const REJECTED = -1

const requestName = (method: ServerRequest["method"]) =>
  method === "sampling/createMessage" ? "sampling request" : "elicitation request"

/** What the gateway answers the server, on the client's behalf, for a request it did not pass on. */
export const withheldAnswer = (request: ServerRequest, why: string) =>
  errorMessage(
    request.id,
    REJECTED,
    `The guardrail withheld this ${requestName(request.method)} from the client: ${why}`
  )

/** The client's answer to a screened server request (a JSON-RPC response it posts), told by its result's shape. */
export interface ClientAnswer {
  readonly id: string | number
  readonly method: ServerRequest["method"]
  readonly result: Json
}

export const clientAnswerOf = (message: unknown): ClientAnswer | undefined => {
  const object = asObject(message)
  const id = object?.["id"]
  const result = asObject(object?.["result"])
  if (result === undefined || (typeof id !== "string" && typeof id !== "number")) return undefined
  // A sampled reply is {model, role, content}; an accepted form is {action: "accept", content}.
  if (typeof result["role"] === "string" && result["content"] !== undefined)
    return { id, method: "sampling/createMessage", result }
  if (result["action"] === "accept" && asObject(result["content"]) !== undefined)
    return { id, method: "elicitation/create", result }
  return undefined
}

/** What the client's answer sends the server: the sampled text (one block a line), or the form's answers. */
export const answerAction = (answer: ClientAnswer) =>
  answer.method === "sampling/createMessage"
    ? {
        operation: answer.method,
        content: slotText(textSlots(blocksOf(answer.result["content"])))
      }
    : { operation: answer.method, params: asObject(answer.result["content"]) ?? {} }

/** The client's answer after a rewrite: a sampled reply's text, put back as a request's is; a form's answers are not edited. */
export const rewrittenAnswer = (answer: ClientAnswer, transformed: string) => {
  if (answer.method !== "sampling/createMessage") return undefined
  const result = structuredClone(answer.result)
  rewriteSlots(textSlots(blocksOf(result["content"])), transformed)
  return { jsonrpc: "2.0", id: answer.id, result }
}

/** What the server receives instead of a client's answer the gateway withheld. */
export const withheldClientAnswer = (answer: ClientAnswer, why: string) =>
  errorMessage(
    answer.id,
    REJECTED,
    `The guardrail withheld the client's answer to this ${requestName(answer.method)}: ${why}`
  )
