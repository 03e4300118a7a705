/**
 * The MCP endpoint's requests to a server: through the outbound guard with
 * the LLM gateway's upstream timeout, and each holding one of the LLM
 * gateway's stream slots (per key and per workspace) while it is relayed.
 */
import { Effect } from "effect"
import { upstreamFailure } from "../gateway/Calls.js"
import type { StreamSlots } from "../gateway/StreamSlots.js"
import {
  isUpstreamFailure,
  sendUpstream,
  type UpstreamFailure,
  type UpstreamResponse,
  UpstreamUnreachable
} from "../gateway/Upstream.js"
import type { Caller } from "../identity/Authentication.js"
import type { OutboundGuard } from "../platform/OutboundGuard.js"

export type UpstreamMethod = "POST" | "GET" | "DELETE"

/** A call to the server's endpoint, answered once its response head is in (its body is then relayed). */
export const makeUpstreamCall =
  (timeoutMillis: number, connectGuard: OutboundGuard["connectOptions"]) =>
  (url: URL, headers: Record<string, string>, body: Uint8Array, method: UpstreamMethod) =>
    Effect.async<UpstreamResponse, UpstreamFailure>((resume) => {
      try {
        const abort = sendUpstream(
          url,
          headers,
          body,
          timeoutMillis,
          connectGuard,
          (result) => resume(isUpstreamFailure(result) ? Effect.fail(result) : Effect.succeed(result)),
          method
        )
        return Effect.sync(abort)
      } catch (error) {
        // node:http refuses a request it cannot send (e.g. a header value it rejects): the server is unreachable.
        resume(Effect.fail(new UpstreamUnreachable({ reason: error instanceof Error ? error.message : String(error) })))
        return Effect.void
      }
    }).pipe(
      Effect.mapError((failure) =>
        upstreamFailure(failure, { status: null, error: null, ended: false }, "The MCP server")
      )
    )

/** Takes a stream slot for one upstream call (429 when the key or workspace has none left); answers its release. */
export const takeSlot = (slots: StreamSlots, caller: Caller) =>
  Effect.suspend(() => {
    const release = slots.tryTake(caller)
    if (release === undefined) return Effect.fail(slots.refusal(caller))
    let released = false
    return Effect.succeed(() => {
      if (!released) {
        released = true
        release()
      }
    })
  })
