/**
 * Group commit for decisions (src/platform/GroupCommit.ts): every
 * decision's trace, receipt and `decisions` event (and the provenance
 * fingerprints and the policy set it names) must be durable before its answer. A batch is one statement (traces, receipts and outbox rows as
 * `with` clauses): one round trip, atomic on its own. A failed batch is
 * retried decision by decision, so one bad record fails only its own request.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { AppConfig } from "../platform/Config.js"
import { allCommitted, makeGroupCommit } from "../platform/GroupCommit.js"
import { Outbox, type OutboxEvent } from "../platform/Outbox.js"
import { type NewPolicySet, PolicySetRepo } from "../policysets/Repo.js"
import { type NewTrace, Traces } from "../runs/Traces.js"
import { AuthorizationRepo, type NewFingerprint } from "./Repo.js"

const MAX_BATCH = 500

export interface DecisionRecord {
  readonly trace: NewTrace
  readonly receipt: {
    readonly id: string
    readonly workspaceId: string
    readonly traceId: string
    readonly jws: string
  }
  readonly event: OutboxEvent
  /** Provenance fingerprints the decided event adds to its run or session (Provenance.ts). */
  readonly fingerprints?: ReadonlyArray<NewFingerprint> | undefined
  /** The policy set that decided, until this process has stored it once (src/policysets). */
  readonly policySet?: NewPolicySet | undefined
}

export class DecisionWriter extends Effect.Service<DecisionWriter>()("authorization/DecisionWriter", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const traces = yield* Traces
    const outbox = yield* Outbox
    const repo = yield* AuthorizationRepo
    const policySets = yield* PolicySetRepo
    const { provenanceMaxPerScope } = yield* AppConfig

    /** The fingerprints of a batch, as one more `with` clause (none when no decision adds any). */
    const fingerprintsOf = (records: ReadonlyArray<DecisionRecord>) => {
      const fingerprints = records.flatMap((record) => record.fingerprints ?? [])
      return fingerprints.length === 0
        ? sql``
        : sql`recorded_fingerprints as (${repo.insertFingerprintsStatement(fingerprints, provenanceMaxPerScope)}),`
    }

    /** The sets a batch names for the first time, once each, as one more `with` clause (none when none). */
    const policySetsOf = (records: ReadonlyArray<DecisionRecord>) => {
      const sets = new Map<string, NewPolicySet>()
      for (const { policySet } of records) {
        if (policySet !== undefined) sets.set(`${policySet.workspaceId}\u0000${policySet.digest}`, policySet)
      }
      return sets.size === 0 ? sql`` : sql`recorded_policy_sets as (${policySets.insertStatement([...sets.values()])}),`
    }

    // One statement (so one round trip and its own transaction): the traces, receipts, fingerprints, policy sets and
    // outbox rows.
    const commit = (records: ReadonlyArray<DecisionRecord>) =>
      sql`with recorded_traces as (${traces.insertStatement(records.map((record) => record.trace))}),
               ${fingerprintsOf(records)}
               ${policySetsOf(records)}
               recorded_receipts as (insert into receipts ${sql.insert(
                 records.map(({ receipt }) => ({
                   id: receipt.id,
                   workspace_id: receipt.workspaceId,
                   trace_id: receipt.traceId,
                   jws: receipt.jws
                 }))
               )})
          ${outbox.insertStatement(records.map((record) => record.event))}`.pipe(
        Effect.zipRight(outbox.written.fire),
        Effect.as(allCommitted(records))
      )

    return yield* makeGroupCommit({ name: "decision", maxBatch: MAX_BATCH, retryAlone: true, commit })
  }),
  dependencies: [Traces.Default, AuthorizationRepo.Default, PolicySetRepo.Default]
}) {}
