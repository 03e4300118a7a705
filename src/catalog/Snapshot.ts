/**
 * The hot-path view of a workspace's catalog: enabled policies compiled
 * once, agent profiles, enabled label policies and enabled tool metadata,
 * held in memory so authorization reads no database. Loaded on first use,
 * dropped on every change (ConfigChanges.ts); concurrent loads of one
 * workspace share a single query. A change can still be missed (see
 * `dueForCheck`), so a snapshot is checked against the workspace's audit
 * head once per CATALOG_SNAPSHOT_REFRESH_SECONDS, in the background.
 */
import { Deferred, Effect, FiberId, Option, Runtime, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import { AuditRepo } from "../audit/Repo.js"
import { AppConfig } from "../platform/Config.js"
import { PolicyDocument } from "./Domain.js"
import { type CompiledPolicy, compilePolicy } from "./PolicyLanguage.js"
import { CatalogRepo, type LabelPolicyRow, type PolicyRow, type ToolMetadataRow } from "./Repo.js"

export interface Snapshot {
  readonly workspaceId: string
  readonly loadedAt: Date
  readonly policies: ReadonlyArray<CompiledPolicy>
  readonly agents: ReadonlyMap<string, unknown>
  /** The version of each agent's profile (a policy set names it: src/policysets). */
  readonly agentVersions: ReadonlyMap<string, number>
  readonly labelPolicies: ReadonlyMap<string, LabelPolicyRow>
  readonly tools: ReadonlyMap<string, ToolMetadataRow>
}

const decodeDocument = Schema.decodeUnknownOption(PolicyDocument)

export class CatalogSnapshot extends Effect.Service<CatalogSnapshot>()("catalog/CatalogSnapshot", {
  effect: Effect.gen(function* () {
    const repo = yield* CatalogRepo
    const audit = yield* AuditRepo
    const refreshMillis = (yield* AppConfig).catalogSnapshotRefreshSeconds * 1000
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const cache = new Map<string, Deferred.Deferred<Snapshot>>()
    /** Loaded snapshots still current, for synchronous readers (`peek`). */
    const loaded = new Map<string, Snapshot>()
    /** Bumped per workspace on invalidation, so a load that raced a change is not kept. */
    const generations = new Map<string, number>()
    /**
     * Per loaded snapshot: the workspace's audit head read just before its rows (every catalog table is
     * audited, so any change since moves it), and when it was last compared with the database.
     */
    const checked = new Map<string, { readonly marker: string; at: number }>()
    /** Workspaces whose check is running. */
    const checking = new Set<string>()
    const markerOf = (workspaceId: string) =>
      Effect.map(audit.head(workspaceId), Option.match({ onNone: () => "0", onSome: (head) => String(head.seq) }))

    /**
     * Compiles the enabled policies. One whose stored document no longer compiles (e.g. a regex RE2
     * cannot run) never matches: it is disabled with the reason recorded, shown as `invalid_reason`.
     */
    const compileEnabled = (workspaceId: string, rows: ReadonlyArray<PolicyRow>) =>
      Effect.gen(function* () {
        const compiled = rows.map((row) => ({
          row,
          policy: Option.getOrUndefined(
            Option.map(decodeDocument(row.document), (document) => compilePolicy(document, row.version))
          )
        }))
        for (const { row, policy } of compiled) {
          const errors = policy?.errors ?? [{ path: "", message: "the stored document does not decode" }]
          if (errors.length === 0) continue
          const reason = errors
            .map((error) => `${error.path === "" ? "document" : error.path}: ${error.message}`)
            .join("; ")
          yield* Effect.logWarning("disabling a stored policy that no longer compiles").pipe(
            Effect.annotateLogs({ workspace_id: workspaceId, policy_id: row.id, reason })
          )
          yield* repo.flagInvalidPolicy(workspaceId, row.id, row.version, reason)
        }
        return compiled.flatMap(({ policy }) => (policy !== undefined && policy.errors.length === 0 ? [policy] : []))
      })

    const load = Effect.fn("CatalogSnapshot.load")(function* (workspaceId: string) {
      // Read first: a change committed between it and the rows below makes the next check reload once more.
      const marker = yield* markerOf(workspaceId)
      const { agents, labels, policies, tools } = yield* Effect.all({
        policies: repo.listPolicies(workspaceId, { enabledOnly: true }),
        agents: repo.listAgents(workspaceId),
        labels: repo.listLabelPolicies(workspaceId),
        tools: repo.listToolMetadata(workspaceId)
      })
      const snapshot = {
        workspaceId,
        loadedAt: new Date(),
        policies: yield* compileEnabled(workspaceId, policies),
        agents: new Map(agents.map((row) => [row.agent_id, row.profile])),
        agentVersions: new Map(agents.map((row) => [row.agent_id, row.version])),
        labelPolicies: new Map(labels.filter((row) => row.enabled).map((row) => [row.origin, row])),
        tools: new Map(tools.filter((row) => row.enabled).map((row) => [row.tool, row]))
      } satisfies Snapshot
      return { snapshot, marker }
    })

    const get = (workspaceId: string): Effect.Effect<Snapshot> =>
      Effect.suspend(() => {
        const cached = cache.get(workspaceId)
        if (cached !== undefined) {
          dueForCheck(workspaceId)
          return Deferred.await(cached)
        }
        const generationOf = () => generations.get(workspaceId) ?? 0
        const generation = generationOf()
        const pending = Deferred.unsafeMake<Snapshot>(FiberId.none)
        cache.set(workspaceId, pending)
        return load(workspaceId).pipe(
          Effect.map(({ marker, snapshot }) => {
            if (generationOf() === generation) checked.set(workspaceId, { marker, at: Date.now() })
            return snapshot
          }),
          Effect.exit,
          Effect.flatMap((exit) => {
            // A failed or outdated load is not kept; waiters still get its result.
            if (exit._tag === "Failure" || generationOf() !== generation) {
              if (cache.get(workspaceId) === pending) cache.delete(workspaceId)
            } else {
              loaded.set(workspaceId, exit.value)
            }
            return Effect.zipRight(Deferred.done(pending, exit), exit)
          })
        )
      }).pipe(Effect.withSpan("CatalogSnapshot.get"))

    /** Compares a snapshot's marker with the database's; a moved one drops the snapshot and loads it again. */
    const check = (workspaceId: string, known: { readonly marker: string }) =>
      markerOf(workspaceId).pipe(
        Effect.flatMap((marker) =>
          marker === known.marker ? Effect.void : Effect.zipRight(invalidate(workspaceId), get(workspaceId))
        ),
        Effect.catchAllCause((cause) => Effect.logWarning("catalog snapshot check failed", cause)),
        Effect.ensuring(Effect.sync(() => checking.delete(workspaceId)))
      )

    /**
     * Changes reach this cache as `config-changes` events, and one can be missed: a process's consumer starts at
     * the topic's end as of its group join, after the process already serves. So once a snapshot was last checked
     * CATALOG_SNAPSHOT_REFRESH_SECONDS ago, its next use starts a check in the background (one indexed read) and
     * goes on with it meanwhile; only a change actually missed loads it again.
     */
    const dueForCheck = (workspaceId: string) => {
      const known = checked.get(workspaceId)
      if (known === undefined || checking.has(workspaceId)) return
      const now = Date.now()
      if (now - known.at < refreshMillis) return
      known.at = now // once per interval, even while the database does not answer
      checking.add(workspaceId)
      runFork(check(workspaceId, known))
    }

    const invalidate = (workspaceId: string) =>
      Effect.sync(() => {
        generations.set(workspaceId, (generations.get(workspaceId) ?? 0) + 1)
        cache.delete(workspaceId)
        loaded.delete(workspaceId)
        checked.delete(workspaceId)
      })

    /** The workspace's snapshot if it is loaded (for synchronous hot paths); else undefined. */
    const peek = (workspaceId: string) => {
      const current = loaded.get(workspaceId)
      if (current !== undefined) dueForCheck(workspaceId)
      return current
    }

    /** This cache's name, as `origin` of the changes it writes (it drops its own entries when they commit). */
    const instance = `${hostname()}-${process.pid}-${randomBytes(6).toString("hex")}`

    return { get, peek, invalidate, instance }
  }),
  dependencies: [CatalogRepo.Default, AuditRepo.Default]
}) {}
