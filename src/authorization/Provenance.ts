/**
 * Provenance without labels (docs/authorization.md): within a run (or, without one, a session),
 * the salient values of text that came in (`input.received`, `tool.result`) are remembered as keyed
 * HMACs with their origin; a later proposed tool call whose param value carries one of them, and
 * that the caller did not label, is treated as coming from that origin (`inferred: true`).
 *
 * Fingerprints are recorded with the decision (DecisionWriter.ts), so they survive restarts and are
 * seen by every instance; each instance keeps a run's or session's fingerprints in memory
 * (`peek` for the warm step, `load` when it is not there), dropped by a change notice when a
 * decision somewhere records new ones.
 */
import { Effect, Redacted } from "effect"
import type { Snapshot } from "../catalog/Snapshot.js"
import { makeNoticeCache } from "../platform/ChangeNotices.js"
import { AppConfig } from "../platform/Config.js"
import { Secrets } from "../platform/Secrets.js"
import { leastTrusted } from "./checkers/Flow.js"
import { isFields } from "./checkers/Param.js"
import { type ProposedEventInput, stringsOf } from "./Decisions.js"
import { fingerprintOf, salientValues, valuesOfParam, workspaceKey } from "./Fingerprints.js"
import type { CheckerMode, CheckerName, ParamSource, ProposedAction } from "./Pipeline.js"
import { AuthorizationRepo, type NewFingerprint } from "./Repo.js"

/** A run's or session's fingerprints, each with the origins it was seen under. */
export type ScopeFingerprints = ReadonlyMap<string, ReadonlyArray<string>>

const NOTICE_TOPIC = "provenance"
/** What a user typed; anything else whose origin is not known counts as a tool's output (untrusted by default). */
const USER_MESSAGE = "user_message"
const FALLBACK_ORIGIN = "tool_output"
const INFERRED_SOURCE_ID = "inferred"
const noSources: ReadonlyArray<ParamSource> = []
const noFingerprints: ReadonlyArray<NewFingerprint> = []

/**
 * Where an event's values are remembered and looked up: its run, else its session, in its environment
 * (the same session id in staging and production is two sessions); nowhere without either.
 */
export const scopeOf = (event: ProposedEventInput): string | undefined => {
  const unscoped = unscopedOf(event)
  return unscoped === undefined ? undefined : `${unscoped}@${event.principal.environment_id}`
}

/** The scope without its environment: how fingerprints were stored before scopes had one (read, never written). */
const unscopedOf = (event: ProposedEventInput): string | undefined =>
  event.run_id !== undefined
    ? `run:${event.run_id}`
    : event.session_id !== undefined
      ? `session:${event.session_id}`
      : undefined

/**
 * `scope` as stored before scopes had an environment; undefined when that text reads as another
 * environment's scope (an id ending in `@env_...`: `session:a@<production>` in staging is production's
 * session `a`, never read from elsewhere).
 */
const legacyScope = (scope: string): ReadonlyArray<string> => {
  const legacy = scope.slice(0, scope.lastIndexOf("@"))
  return /@env_[^@]*$/.test(legacy) ? [] : [legacy]
}

/**
 * The origin of what came in: an input is the least trusted origin its `sources` name, else `user`
 * for a `user_message`; a tool result is its tool metadata's `result_origin`. Otherwise `tool_output`.
 */
const originOf = (event: ProposedEventInput, snapshot: Snapshot): string => {
  const { action } = event
  if (event.kind === "input.received") {
    const given = leastTrusted(
      snapshot.labelPolicies,
      (action.sources ?? []).map((source) => source.origin)
    )
    return given ?? (action.operation === USER_MESSAGE ? "user" : FALLBACK_ORIGIN)
  }
  const metadata = snapshot.tools.get(action.operation)?.metadata
  const resultOrigin = isFields(metadata) ? metadata["result_origin"] : undefined
  return typeof resultOrigin === "string" ? resultOrigin : FALLBACK_ORIGIN
}

/** Whether deciding reads the scope's fingerprints: a proposed call with params, and a checker that reads sources. */
export const readsProvenance = (
  event: ProposedEventInput,
  modes: Readonly<Record<CheckerName, CheckerMode>>
): boolean =>
  event.kind === "output.proposed" &&
  event.action.params !== undefined &&
  (modes.param !== "off" || modes.flow !== "off" || modes.memory !== "off")

const cacheKey = (workspaceId: string, scope: string) => `${workspaceId}|${scope}`

export class Provenance extends Effect.Service<Provenance>()("authorization/Provenance", {
  scoped: Effect.gen(function* () {
    const repo = yield* AuthorizationRepo
    const { provenanceMaxPerScope } = yield* AppConfig
    // The service secret, as the webhook secrets derive theirs (src/billing/Webhooks.ts); never stored.
    const serviceSecret = Redacted.value((yield* Secrets).jwtSecret)
    const cache = yield* makeNoticeCache<ScopeFingerprints>(NOTICE_TOPIC)
    const keys = new Map<string, Buffer>()

    const keyOf = (workspaceId: string): Buffer => {
      let key = keys.get(workspaceId)
      if (key === undefined) {
        if (keys.size >= 10_000) keys.clear()
        key = workspaceKey(serviceSecret, workspaceId)
        keys.set(workspaceId, key)
      }
      return key
    }

    /** The scope's fingerprints if they are in memory (for the warm step). */
    const peek = (workspaceId: string, scope: string) => cache.peek(cacheKey(workspaceId, scope))

    /** The scope's fingerprints, read when they are not in memory (and then kept). */
    const load = (workspaceId: string, scope: string): Effect.Effect<ScopeFingerprints> =>
      cache.get(
        cacheKey(workspaceId, scope),
        // Fingerprints stored before scopes had an environment still count, in every environment of their scope.
        Effect.map(
          repo.listFingerprints(workspaceId, [scope, ...legacyScope(scope)], provenanceMaxPerScope),
          (rows) => {
            const known = new Map<string, Array<string>>()
            for (const row of rows) {
              const origins = known.get(row.fingerprint)
              if (origins === undefined) known.set(row.fingerprint, [row.origin])
              else origins.push(row.origin)
            }
            return known
          }
        )
      )

    /** The fingerprints an incoming event adds to its scope (none for a proposed output, or without a scope). */
    const observed = (
      workspaceId: string,
      event: ProposedEventInput,
      snapshot: Snapshot
    ): ReadonlyArray<NewFingerprint> => {
      const scope = scopeOf(event)
      if (scope === undefined || event.kind === "output.proposed") return noFingerprints
      const values = new Set<string>()
      if (event.action.content !== undefined) salientValues(event.action.content, values)
      if (event.action.params !== undefined) {
        for (const text of stringsOf(event.action.params, [])) salientValues(text, values)
      }
      if (values.size === 0) return noFingerprints
      const origin = originOf(event, snapshot)
      const key = keyOf(workspaceId)
      const known = peek(workspaceId, scope)
      const rows: Array<NewFingerprint> = []
      for (const value of values) {
        const fingerprint = fingerprintOf(key, value)
        // Already recorded under this origin: nothing to write.
        if (known?.get(fingerprint)?.includes(origin) !== true) {
          rows.push({ workspace_id: workspaceId, scope, fingerprint, origin })
        }
      }
      return rows
    }

    /**
     * Labels for the param values of `action` that carry a value seen in the scope, each as its least
     * trusted origin; a value the caller labelled (its path, or a path around it) is left to the caller.
     */
    const infer = (
      workspaceId: string,
      known: ScopeFingerprints,
      action: ProposedAction,
      labels: Snapshot["labelPolicies"]
    ): ReadonlyArray<ParamSource> => {
      if (known.size === 0 || action.params === undefined) return noSources
      const given = action.sources ?? noSources
      const key = keyOf(workspaceId)
      let inferred: Array<ParamSource> | undefined
      const visit = (value: unknown, path: string): void => {
        if (given.some((source) => source.path === path)) return
        if (typeof value === "string" || typeof value === "number") {
          const origins = new Set<string>()
          for (const normalised of valuesOfParam(String(value))) {
            for (const origin of known.get(fingerprintOf(key, normalised)) ?? []) origins.add(origin)
          }
          const origin = leastTrusted(labels, origins)
          if (origin !== undefined) {
            ;(inferred ??= []).push({ path, origin, source_id: INFERRED_SOURCE_ID, inferred: true })
          }
        } else if (Array.isArray(value)) {
          value.forEach((item, index) => visit(item, `${path}.${index}`))
        } else if (isFields(value)) {
          for (const [name, item] of Object.entries(value)) visit(item, `${path}.${name}`)
        }
      }
      for (const [name, value] of Object.entries(action.params)) visit(value, name)
      return inferred ?? noSources
    }

    /** After fingerprints of `scope` were recorded: every instance (this one too) reads the scope anew. */
    const recorded = (workspaceId: string, scope: string) => cache.changed(cacheKey(workspaceId, scope))

    return { peek, load, observed, infer, recorded }
  }),
  dependencies: [AuthorizationRepo.Default]
}) {}
