/**
 * What a client's `resources/read` and `prompts/get` send to the server (a URI, a prompt's arguments) may
 * carry data out as a tool call's arguments do: decided before they go out, as `output.proposed` with the
 * method as operation, and refused with a JSON-RPC error the client raises when not permitted. What they
 * answer is decided as a tool result (ContentResults.ts).
 */
import type { DecisionAnswer } from "../authorization/Decisions.js"
import { type ContentMethod, isContentMethod } from "./ContentResults.js"
import { asObject, errorMessage, reasonsOf } from "./Screening.js"

/** JSON-RPC's implementation-defined server error: the gateway answers in the server's place. */
const REFUSED = -32000

/** The proposed action of a request that sends values to the server, or undefined for any other method. */
export const outgoingAction = (method: string | undefined, message: unknown) => {
  if (!isContentMethod(method)) return undefined
  const params = asObject(asObject(message)?.["params"]) ?? {}
  return {
    operation: method,
    params:
      method === "resources/read"
        ? { uri: params["uri"] ?? null }
        : { name: params["name"] ?? null, arguments: params["arguments"] ?? {} }
  }
}

/** The error a request the guardrail did not let out answers (deny, defer, or a rewrite it cannot apply). */
export const outgoingRefusal = (id: string | number, method: ContentMethod, answer: DecisionAnswer) => {
  const approval =
    answer.effect === "defer" && answer.intent_id !== null
      ? ` Approval intent: ${answer.intent_id} (grant it with POST /v1/approvals/${answer.intent_id}/grant, then send the same request again).`
      : ""
  return errorMessage(
    id,
    REFUSED,
    `The guardrail did not let this ${method} request out (${answer.effect}): ${reasonsOf(answer)}.${approval} Trace: ${answer.trace_id}.`
  )
}
