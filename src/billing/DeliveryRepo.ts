/** SQL of budget alert webhook deliveries and their attempts. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

const DeliveryRow = Schema.Struct({
  id: Schema.String,
  firing_id: Schema.String,
  config_id: Schema.String,
  workspace_id: Schema.String,
  url: Schema.String,
  status: Schema.String,
  attempt_count: Schema.Number,
  next_attempt_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type DeliveryRow = typeof DeliveryRow.Type

/** A due delivery, claimed for one attempt, with what signing it needs. */
const ClaimedDelivery = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  config_id: Schema.String,
  url: Schema.String,
  body: Schema.String,
  attempt_count: Schema.Number,
  secret_salt: Schema.String
})
export type ClaimedDelivery = typeof ClaimedDelivery.Type

const AttemptRow = Schema.Struct({
  delivery_id: Schema.String,
  attempt: Schema.Number,
  attempted_at: Schema.DateFromSelf,
  duration_ms: Schema.Number,
  response_status: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  succeeded: Schema.Boolean
})
export type AttemptRow = typeof AttemptRow.Type

export class DeliveryRepo extends Effect.Service<DeliveryRepo>()("billing/DeliveryRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const claimDue = SqlSchema.findAll({
      Request: Schema.Struct({
        limit: Schema.Number,
        leaseSeconds: Schema.Number,
        perWorkspace: Schema.Number,
        /** JSON object: attempts in flight by workspace id. */
        inFlight: Schema.String
      }),
      Result: ClaimedDelivery,
      // Each workspace's due deliveries are ranked after its attempts already in flight; only ranks up to
      // `perWorkspace` are taken, lowest rank first, so every workspace with due deliveries gets its turn.
      execute: ({ inFlight, leaseSeconds, limit, perWorkspace }) => sql`
        with busy as (
          select key as workspace_id, value::int as in_flight from jsonb_each_text(${inFlight}::jsonb)
        ), ranked as (
          select d.id, d.next_attempt_at,
                 coalesce(b.in_flight, 0)
                   + row_number() over (partition by d.workspace_id order by d.next_attempt_at, d.id) as rank
            from webhook_deliveries d left join busy b on b.workspace_id = d.workspace_id
            -- A disabled alert sends nothing: its pending deliveries wait, and go on if it is enabled again.
            join budget_alert_configs c on c.id = d.config_id and c.enabled
           where d.status = 'pending' and d.next_attempt_at <= now()
        ), due as (
          select d.id from webhook_deliveries d join ranked r on r.id = d.id
           where r.rank <= ${perWorkspace} and d.status = 'pending' and d.next_attempt_at <= now()
           order by r.rank, r.next_attempt_at
           limit ${limit}
           for update of d skip locked
        ), claimed as (
          -- Each attempt goes to the config's webhook_url as it is now: a URL changed to fix or replace a
          -- receiver also takes the retries of deliveries already pending (the row records where it went).
          update webhook_deliveries d set next_attempt_at = now() + make_interval(secs => ${leaseSeconds}),
                 url = coalesce(c.webhook_url, d.url)
            from due, budget_alert_configs c
           where d.id = due.id and c.id = d.config_id
          returning d.id, d.workspace_id, d.config_id, d.url, d.body, d.attempt_count, c.secret_salt
        )
        select id, workspace_id, config_id, url, body, attempt_count, secret_salt from claimed`
    })

    const listForConfig = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: Schema.String, configId: Schema.String }),
      Result: DeliveryRow,
      execute: ({ configId, workspaceId }) => sql`
        select id, firing_id, config_id, workspace_id, url, status, attempt_count, next_attempt_at, created_at, updated_at
        from webhook_deliveries where workspace_id = ${workspaceId} and config_id = ${configId}
        order by created_at desc, id desc limit 100`
    })

    const attemptsOf = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: AttemptRow,
      execute: (deliveryIds) => sql`
        select delivery_id, attempt, attempted_at, duration_ms, response_status, error, succeeded
        from webhook_delivery_attempts where delivery_id in ${sql.in(deliveryIds)}
        order by delivery_id, attempt`
    })

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
       * next attempt out), so no other worker attempts them meanwhile; at most
       * `perWorkspace` per workspace counting `inFlight` (this worker's attempts
       * still running, by workspace).
       */
      claimDue: (limit: number, leaseSeconds: number, perWorkspace: number, inFlight: ReadonlyMap<string, number>) =>
        claimDue({
          limit,
          leaseSeconds,
          perWorkspace,
          inFlight: JSON.stringify(Object.fromEntries(inFlight))
        }),

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

      listForConfig: (workspaceId: string, configId: string) => listForConfig({ workspaceId, configId }),

      attemptsOf: (deliveryIds: ReadonlyArray<string>) =>
        deliveryIds.length === 0 ? Effect.succeed([] as ReadonlyArray<AttemptRow>) : attemptsOf(deliveryIds)
    })
  })
}) {}
