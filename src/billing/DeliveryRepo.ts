/** SQL of budget alert webhook deliveries and their attempts. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

export interface DeliveryRow {
  readonly id: string
  readonly firing_id: string
  readonly config_id: string
  readonly workspace_id: string
  readonly url: string
  readonly status: string
  readonly attempt_count: number
  readonly next_attempt_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

/** A due delivery, claimed for one attempt, with what signing it needs. */
export interface ClaimedDelivery {
  readonly id: string
  readonly config_id: string
  readonly url: string
  readonly body: string
  readonly attempt_count: number
  readonly secret_salt: string
}

export interface AttemptRow {
  readonly delivery_id: string
  readonly attempt: number
  readonly attempted_at: Date
  readonly duration_ms: number
  readonly response_status: number | null
  readonly error: string | null
  readonly succeeded: boolean
}

export class DeliveryRepo extends Effect.Service<DeliveryRepo>()("billing/DeliveryRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    return dieOnErrors({
      /** One delivery per firing; a second insert for the same firing changes nothing. */
      insert: (row: {
        readonly id: string
        readonly firing_id: string
        readonly config_id: string
        readonly workspace_id: string
        readonly url: string
        readonly body: string
      }) =>
        sql`insert into webhook_deliveries ${sql.insert({ ...row, status: "pending", next_attempt_at: new Date() })}
            on conflict (firing_id) do nothing`,

      /**
       * Claims up to `limit` due deliveries for `leaseSeconds` (pushing their
       * next attempt out), so no other worker attempts them meanwhile.
       */
      claimDue: (limit: number, leaseSeconds: number) =>
        sql<ClaimedDelivery>`
          with due as (
            select id from webhook_deliveries
            where status = 'pending' and next_attempt_at <= now()
            order by next_attempt_at limit ${limit}
            for update skip locked
          ), claimed as (
            update webhook_deliveries d set next_attempt_at = now() + make_interval(secs => ${leaseSeconds})
            from due where d.id = due.id
            returning d.id, d.config_id, d.url, d.body, d.attempt_count
          )
          select claimed.id, claimed.config_id, claimed.url, claimed.body, claimed.attempt_count, c.secret_salt
          from claimed join budget_alert_configs c on c.id = claimed.config_id`,

      /** Records one attempt and the delivery's state after it, together. */
      recordAttempt: (
        attempt: AttemptRow,
        after: { readonly status: "pending" | "succeeded" | "failed"; readonly next_attempt_at: Date | null }
      ) =>
        sql.withTransaction(
          Effect.zipRight(
            sql`insert into webhook_delivery_attempts ${sql.insert({ ...attempt })} on conflict do nothing`,
            sql`update webhook_deliveries
                set status = ${after.status}, attempt_count = ${attempt.attempt},
                    next_attempt_at = ${after.next_attempt_at}, updated_at = now()
                where id = ${attempt.delivery_id}`
          )
        ),

      listForConfig: (workspaceId: string, configId: string) =>
        sql<DeliveryRow>`
          select id, firing_id, config_id, workspace_id, url, status, attempt_count, next_attempt_at, created_at, updated_at
          from webhook_deliveries where workspace_id = ${workspaceId} and config_id = ${configId}
          order by created_at desc, id desc limit 100`,

      attemptsOf: (deliveryIds: ReadonlyArray<string>) =>
        deliveryIds.length === 0
          ? Effect.succeed([] as ReadonlyArray<AttemptRow>)
          : sql<AttemptRow>`
              select delivery_id, attempt, attempted_at, duration_ms, response_status, error, succeeded
              from webhook_delivery_attempts where delivery_id in ${sql.in(deliveryIds)}
              order by delivery_id, attempt`
    })
  })
}) {}
