/**
 * `require_impact_before_enable` (docs/policies.md, "Lifecycle"): when a
 * workspace sets it, a policy document may be enabled only after an impact
 * replay that evaluated that very document as enabled completed within the
 * last 24 hours, and replayed at least one decision: a replay over a window without any (or with only
 * decisions kept as metadata only, which it skips) shows nothing of the document's impact, so it vouches
 * only while the workspace has no decisions at all (a new workspace can enable its first policies). Written once here; every path that enables a policy (create,
 * PUT, rollback, enable, batch enable, pack install) calls `beforeEnabling`.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import { canonicalJson } from "../authorization/Receipts.js"
import { Conflict } from "../http/Errors.js"

/** How long a completed replay vouches for the documents it evaluated. */
export const IMPACT_VALID_HOURS = 24

/**
 * The digest of a policy document: SHA-256 of its canonical JSON without `enabled`
 * (whether a document is on is what the gate decides, not part of what was replayed).
 */
export const documentDigest = (document: unknown): string => {
  const { enabled: _enabled, ...rest } =
    typeof document === "object" && document !== null ? (document as Record<string, unknown>) : { value: document }
  return createHash("sha256").update(canonicalJson(rest)).digest("hex")
}

export interface EnablingDocument {
  readonly id: string
  readonly document: unknown
}

const GateRow = Schema.Struct({
  required: Schema.Boolean,
  covered: Schema.Array(Schema.String),
  metadata_only: Schema.Boolean
})

export class ImpactGate extends Effect.Service<ImpactGate>()("impact/ImpactGate", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, digests: Schema.Array(Schema.String) }),
      Result: GateRow,
      execute: ({ digests, workspaceId }) =>
        sql`select s.require_impact_before_enable as required, s.data_handling_mode = 'metadata_only' as metadata_only,
                   coalesce((select array_agg(distinct d) from impact_jobs j, unnest(j.document_digests) d
                              where j.workspace_id = ${workspaceId} and j.status = 'completed'
                                and j.finished_at > now() - make_interval(hours => ${IMPACT_VALID_HOURS})
                                and (coalesce((j.result ->> 'decisions_replayed')::int, 0) > 0
                                     or not exists (select 1 from traces t where t.workspace_id = ${workspaceId}))
                                and d in ${sql.in(digests)}), '{}') as covered
              from workspace_settings s where s.workspace_id = ${workspaceId}`
    })

    /** 409 `impact_required` when the workspace asks for a replay first and one of `documents` has none. */
    const beforeEnabling = (workspaceId: string, documents: ReadonlyArray<EnablingDocument>) =>
      Effect.gen(function* () {
        if (documents.length === 0) return
        const digests = documents.map((entry) => ({ ...entry, digest: documentDigest(entry.document) }))
        const row = yield* Effect.orDie(find({ workspaceId, digests: digests.map((entry) => entry.digest) }))
        if (Option.isNone(row) || !row.value.required) return
        const covered = new Set(row.value.covered)
        const missing = digests.filter((entry) => !covered.has(entry.digest))
        if (missing.length === 0) return
        return yield* new Conflict({
          code: "impact_required",
          message:
            `This workspace sets require_impact_before_enable: enabling ${missing.map((entry) => entry.id).join(", ")} ` +
            `needs an impact replay of that document completed in the last ${IMPACT_VALID_HOURS} hours. ` +
            "Start one with POST /v1/policies/impact (the document in candidate_policies, or its id in enable_ids), " +
            "over a window that holds decisions (a replay of none vouches only while the workspace has none), " +
            "wait for it to complete, then enable again." +
            // No replay can run there (its decisions keep no input): say how out, rather than send them round.
            (row.value.metadata_only
              ? " This workspace's data_handling_mode is metadata_only, so a replay can only run while it has no " +
                "decisions: set data_handling_mode to redacted or raw_allowed (decisions from then on can be " +
                "replayed), or turn require_impact_before_enable off."
              : ""),
          details: missing.map((entry) => ({
            path: entry.id,
            message: `no completed replay of document ${entry.digest}`
          }))
        })
      }).pipe(Effect.withSpan("ImpactGate.beforeEnabling"))

    return { beforeEnabling }
  })
}) {}
