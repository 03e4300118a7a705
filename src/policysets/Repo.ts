/** SQL of policy sets: stored once per workspace and digest, with the decision that first names one. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { PolicySetContent } from "./Domain.js"

/** A set to store (if absent) with a decision's trace. */
export interface NewPolicySet {
  readonly workspaceId: string
  readonly digest: string
  readonly content: PolicySetContent
}

const PolicySetRow = Schema.Struct({
  content: PolicySetContent,
  created_at: Schema.DateFromSelf
})

export class PolicySetRepo extends Effect.Service<PolicySetRepo>()("policysets/PolicySetRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The insert of a batch (at least one) as a statement, for the decision group commit; a known set stays. */
    const insertStatement = (sets: ReadonlyArray<NewPolicySet>) =>
      sql`insert into policy_sets ${sql.insert(
        sets.map((set) => ({
          workspace_id: set.workspaceId,
          digest: set.digest,
          content: JSON.stringify(set.content)
        }))
      )} on conflict do nothing`

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceId: Schema.String, digest: Schema.String }),
      Result: PolicySetRow,
      execute: ({ digest, workspaceId }) =>
        sql`select content, created_at from policy_sets where workspace_id = ${workspaceId} and digest = ${digest}`
    })

    return {
      insertStatement,
      ...dieOnErrors({ find: (workspaceId: string, digest: string) => find({ workspaceId, digest }) })
    }
  })
}) {}
