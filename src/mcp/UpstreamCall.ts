/**
 * The MCP endpoint's requests to a server: through the outbound guard with
 * the LLM gateway's upstream timeout, and each holding one of the LLM
 * gateway's stream slots (per key and per workspace) while it is relayed;
 * deleting the server ends them (Servers.ts `watch`).
 */
import { Effect, Exit } from "effect"
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
import type { AnswerStop } from "./Answer.js"
import { type McpServers, serverNotFound, type ServerTarget } from "./Servers.js"

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

/** One request to the server in flight: its end should the server be deleted meanwhile, and `release` of its slot. */
export interface Flight {
  readonly stop: AnswerStop
  readonly release: () => void
}

/**
 * One request to the server in flight: a stream slot (429 when none is left), and its end should the server
 * be deleted meanwhile (`stop`: the call, or the answer under way, ends at once). `release` frees both.
 */
export const takeFlight = (slots: StreamSlots, watch: McpServers["watch"], caller: Caller, target: ServerTarget) =>
  Effect.map(takeSlot(slots, caller), (freeSlot): Flight => {
    const removed = new AbortController()
    const unwatch = watch(caller.workspaceId, target.id, () => removed.abort())
    return {
      stop: {
        signal: removed.signal,
        error: serverNotFound(target.id),
        reason: "The MCP server was deleted while this request was in flight; the gateway ended it."
      },
      release: () => {
        unwatch()
        freeSlot()
      }
    }
  })

/**
 * `upstream` (a call) in `flight`: given up (and its request aborted) once the server is deleted; the slot is
 * released when no response comes of it (failed, given up, or the client gone), else by whoever relays it.
 */
export const callInFlight = <A, E>({ release, stop }: Flight, upstream: Effect.Effect<A, E>) =>
  Effect.raceFirst(
    upstream,
    Effect.async<never, AnswerStop["error"]>((resume) => {
      const stopped = () => resume(Effect.fail(stop.error))
      if (stop.signal.aborted) stopped()
      else stop.signal.addEventListener("abort", stopped, { once: true })
      return Effect.sync(() => stop.signal.removeEventListener("abort", stopped))
    })
  ).pipe(Effect.onExit((exit) => Effect.sync(() => Exit.isSuccess(exit) || release())))

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
