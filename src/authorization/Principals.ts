/**
 * The principal of a proposed event. A runtime key is bound to one
 * workspace and environment, so its events may leave both out; a value
 * given must still be the credential's own, and the refusal names it.
 */
import { BadRequest, Forbidden, NotFound } from "../http/Errors.js"
import type { Caller } from "../identity/Authentication.js"
import type { ProposedEventInput } from "./Decisions.js"

/** An event as sent: `workspace_id` and `environment_id` of its principal may be left to the credential. */
export type RequestedEvent = Omit<ProposedEventInput, "principal"> & {
  readonly principal: {
    readonly agent_id: string
    readonly workspace_id?: string | undefined
    readonly environment_id?: string | undefined
  }
}

const isComplete = (event: RequestedEvent): event is ProposedEventInput =>
  event.principal.workspace_id !== undefined && event.principal.environment_id !== undefined

/** The event with the credential's workspace and environment where it left them out (as sent when complete). */
export const completedEvent = (event: RequestedEvent, caller: Caller): ProposedEventInput =>
  isComplete(event)
    ? event
    : {
        ...event,
        principal: {
          agent_id: event.principal.agent_id,
          workspace_id: event.principal.workspace_id ?? caller.workspaceId,
          // A session without one is refused by `principalMismatch` before this empty id is looked up.
          environment_id: event.principal.environment_id ?? caller.environmentId ?? ""
        }
      }

/** Why the event's principal is not the caller's to decide for; undefined when it is. */
export const principalMismatch = (event: RequestedEvent, caller: Caller) => {
  const { environment_id, workspace_id } = event.principal
  if (workspace_id !== undefined && workspace_id !== caller.workspaceId) {
    return new NotFound({
      code: "workspace_not_found",
      message: `principal.workspace_id must be the workspace of your credential (${caller.workspaceId}), or be left out.`,
      details: [{ path: "principal.workspace_id", message: `expected ${caller.workspaceId}` }]
    })
  }
  if (caller.environmentId !== null && environment_id !== undefined && environment_id !== caller.environmentId) {
    return new Forbidden({
      code: "environment_mismatch",
      message: `This runtime key is bound to environment ${caller.environmentId}; principal.environment_id must be it, or be left out.`,
      details: [{ path: "principal.environment_id", message: `expected ${caller.environmentId}` }]
    })
  }
  if (caller.environmentId === null && environment_id === undefined) {
    return new BadRequest({
      code: "validation_failed",
      message: "principal.environment_id is required with a user session (a runtime key supplies its own).",
      details: [{ path: "principal.environment_id", message: "is missing" }]
    })
  }
  return undefined
}
