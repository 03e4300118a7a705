/**
 * Caps on the gateway calls in flight at once: per workspace
 * (GATEWAY_MAX_STREAMS_PER_WORKSPACE) and per API key, or per user for a
 * session (GATEWAY_MAX_STREAMS_PER_KEY). A call holds its slot from before
 * admission until its response closed (answer out, provider failed, or the
 * client left), streamed or not. Above a cap the call is refused with 429
 * `too_many_streams` and `Retry-After`, before anything is reserved or sent.
 *
 * The counts are this process's: with N API processes a workspace can hold
 * up to N times the cap (docs/gateway.md).
 */
import { Effect } from "effect"
import type { Caller } from "../identity/Authentication.js"
import { AppConfig } from "../platform/Config.js"
import { tooManyRequests } from "../http/Errors.js"

/** Seconds a refused client is told to wait: streams end at any moment, so a short retry is right. */
const RETRY_AFTER_SECONDS = 1

const take = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1)

const give = (counts: Map<string, number>, key: string) => {
  const left = (counts.get(key) ?? 1) - 1
  if (left === 0) counts.delete(key)
  else counts.set(key, left)
}

export class StreamSlots extends Effect.Service<StreamSlots>()("gateway/StreamSlots", {
  effect: Effect.map(AppConfig, (config) => {
    const perWorkspace = config.gatewayMaxStreamsPerWorkspace
    const perKey = config.gatewayMaxStreamsPerKey
    const byWorkspace = new Map<string, number>()
    const byKey = new Map<string, number>()

    /** A slot for `caller`'s call, as its release (safe to call more than once); undefined at a cap. */
    const tryTake = (caller: Caller): (() => void) | undefined => {
      const key = caller.apiKeyId ?? caller.principalId
      if ((byWorkspace.get(caller.workspaceId) ?? 0) >= perWorkspace || (byKey.get(key) ?? 0) >= perKey) {
        return undefined
      }
      take(byWorkspace, caller.workspaceId)
      take(byKey, key)
      let held = true
      return () => {
        if (!held) return
        held = false
        give(byWorkspace, caller.workspaceId)
        give(byKey, key)
      }
    }

    /** The 429 for a call refused at a cap (with `Retry-After` on both the pipeline and the fast lane). */
    const refusal = (caller: Caller) => {
      const key = caller.apiKeyId ?? caller.principalId
      const atKey = (byKey.get(key) ?? 0) >= perKey
      return tooManyRequests(
        RETRY_AFTER_SECONDS,
        atKey
          ? `This ${caller.apiKeyId === null ? "user" : "API key"} already has ${perKey} gateway calls in flight (GATEWAY_MAX_STREAMS_PER_KEY); retry when one has ended.`
          : `This workspace already has ${perWorkspace} gateway calls in flight (GATEWAY_MAX_STREAMS_PER_WORKSPACE); retry when one has ended.`,
        "too_many_streams"
      )
    }

    return { tryTake, refusal }
  })
}) {}
