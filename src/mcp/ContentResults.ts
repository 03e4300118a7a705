/**
 * The pure parts of screening the other answers whose content enters the
 * model's context as a tool result's does: a read resource
 * (`resources/read`: its text contents) and a fetched prompt (`prompts/get`:
 * its description and its messages' text). Each is decided as a
 * `tool.result`; this says what text is screened and what the client
 * receives after the decision.
 */
import type { DecisionAnswer } from "../authorization/Decisions.js"
import { asObject, errorMessage, resultMessage, withheldReason } from "./Screening.js"
import { fieldSlot, messageSlots, rewriteSlots, slotText } from "./TextSlots.js"

type Json = Record<string, unknown>

const CONTENT_METHODS = { "resources/read": "resource", "prompts/get": "prompt" } as const
export type ContentMethod = keyof typeof CONTENT_METHODS

export const isContentMethod = (method: string | undefined): method is ContentMethod =>
  method !== undefined && method in CONTENT_METHODS

/** JSON-RPC's implementation-defined server error: the gateway answers in the server's place. */
const WITHHELD = -32000

const slotsOf = (method: ContentMethod, result: Json) =>
  method === "resources/read"
    ? (Array.isArray(result["contents"]) ? (result["contents"] as ReadonlyArray<unknown>) : []).flatMap((item) =>
        fieldSlot(asObject(item), "text")
      )
    : [...fieldSlot(result, "description"), ...messageSlots(result["messages"])]

/** What the answer's decision screens: its text, one part a line (binary contents carry none). */
export const contentText = (method: ContentMethod, result: Json) => slotText(slotsOf(method, structuredClone(result)))

/** The part of the decision's source id that names what was read: `mcp:<server>/<resources|prompts>`. */
export const contentSource = (method: ContentMethod) => (method === "resources/read" ? "resources" : "prompts")

/**
 * The answer to request `id` after its decision: unchanged on permit (undefined), its text rewritten part by
 * part on rewrite, or a JSON-RPC error naming the reasons on deny or defer.
 */
export const screenedContent = (
  method: ContentMethod,
  id: string | number,
  result: Json,
  answer: DecisionAnswer
): unknown => {
  if (answer.effect === "permit") return undefined
  if (answer.effect === "rewrite") {
    const copy = structuredClone(result)
    rewriteSlots(slotsOf(method, copy), answer.transformed_value ?? "")
    return resultMessage(id, copy)
  }
  return errorMessage(id, WITHHELD, `The guardrail withheld this ${CONTENT_METHODS[method]}: ${withheldReason(answer)}`)
}

/** An answer that could not be decided: withheld (fail closed). */
export const unscreenedContent = (method: ContentMethod, id: string | number, why: string) =>
  errorMessage(id, WITHHELD, `This ${CONTENT_METHODS[method]} was withheld: it could not be screened (${why}).`)
