/**
 * SQL of the LLM budget ledger: spend and open reservations per workspace and
 * UTC window, in USD nanos (bigint, passed as decimal strings). Admission is
 * one conditional UPDATE, so concurrent requests in any number of processes
 * can never reserve past the cap together.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

export type WindowKind = "day" | "month"

/** Spend to add to one window row. */
export interface SpendRow {
  readonly workspaceId: string
  readonly kind: WindowKind
  readonly start: Date
  readonly spent: bigint
}

export interface WindowKey {
  readonly workspaceId: string
  readonly kind: WindowKind
  readonly start: Date
}

/**
 * The most spend a window row records (the bigint maximum): spend saturates there rather than failing the
 * settlement, whose transaction also records the calls' usage events. With prices and token counts bounded, a call
 * adds at most 2 * 10^17, so only tens of calls at the highest price in one window reach it.
 */
const MAX_LEDGER_NANOS = 9_223_372_036_854_775_807n

const decodeCommitted = Schema.decodeUnknown(Schema.Array(Schema.Struct({ committed: Schema.String })))
const decodeIds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String })))

export class BudgetRepo extends Effect.Service<BudgetRepo>()("billing/BudgetRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    return dieOnErrors({
      ensureWindow: (key: WindowKey) =>
        sql`insert into llm_budget_ledger (workspace_id, window_kind, window_start)
            values (${key.workspaceId}, ${key.kind}, ${key.start})
            on conflict do nothing`.pipe(Effect.asVoid),

      /** Spend plus reservations of the window (0 when nothing was recorded yet). */
      committed: (key: WindowKey) =>
        sql`
          select (spent_usd_nanos::numeric + reserved_usd_nanos)::text as committed from llm_budget_ledger
          where workspace_id = ${key.workspaceId} and window_kind = ${key.kind} and window_start = ${key.start}`.pipe(
          Effect.flatMap(decodeCommitted),
          Effect.map((rows) => BigInt(rows[0]?.committed ?? "0"))
        ),

      /**
       * Reserves `amount` if spend + reserved + amount <= cap, recording the
       * reservation in the same statement. The window row must exist
       * (`ensureWindow`). Answers the reservation id, or none when refused.
       */
      reserve: (key: WindowKey, input: { id: string; amount: bigint; cap: bigint; expiresAt: Date }) =>
        // One statement, one round trip. A reservation lost with a database crash only forgets an in-flight
        // hold (its call still settles its spend), so its commit need not wait for the WAL flush:
        // set_config(..., true) turns synchronous_commit off for this statement's own transaction.
        sql`
          with async_commit as (select set_config('synchronous_commit', 'off', true) as setting),
          admitted as (
            update llm_budget_ledger
               set reserved_usd_nanos = reserved_usd_nanos + ${input.amount.toString()}::bigint, updated_at = now()
              from async_commit
             where workspace_id = ${key.workspaceId} and window_kind = ${key.kind} and window_start = ${key.start}
               and spent_usd_nanos::numeric + reserved_usd_nanos + ${input.amount.toString()}::numeric <= ${input.cap.toString()}::numeric
            returning workspace_id
          )
          insert into llm_budget_reservations (id, workspace_id, window_kind, window_start, amount_usd_nanos, expires_at)
          select ${input.id}, workspace_id, ${key.kind}, ${key.start}, ${input.amount.toString()}::bigint, ${input.expiresAt}
            from admitted
          returning id`.pipe(
          Effect.flatMap(decodeIds),
          Effect.map((rows) => Option.fromNullable(rows[0]?.id))
        ),

      /**
       * Settles calls in one statement: adds each row's spend to its window
       * (rows unique and sorted, so concurrent settlements lock in one order)
       * and drops the given reservations with their holds on those rows.
       */
      settle: (rows: ReadonlyArray<SpendRow>, reservationIds: ReadonlyArray<string>) =>
        sql`with released as (
              delete from llm_budget_reservations where id in ${sql.in(reservationIds.length === 0 ? [""] : reservationIds)}
              returning workspace_id, window_kind, window_start, amount_usd_nanos
            ), held as (
              select workspace_id, window_kind, window_start, sum(amount_usd_nanos)::bigint as amount
                from released group by workspace_id, window_kind, window_start
            )
            insert into llm_budget_ledger as l ${sql.insert(
              rows.map((row) => ({
                workspace_id: row.workspaceId,
                window_kind: row.kind,
                window_start: row.start,
                spent_usd_nanos: (row.spent < MAX_LEDGER_NANOS ? row.spent : MAX_LEDGER_NANOS).toString()
              }))
            )}
            on conflict (workspace_id, window_kind, window_start) do update
              set spent_usd_nanos = least(l.spent_usd_nanos::numeric + excluded.spent_usd_nanos, 9223372036854775807)::bigint,
                  reserved_usd_nanos = l.reserved_usd_nanos - coalesce((
                    select h.amount from held h
                     where h.workspace_id = excluded.workspace_id and h.window_kind = excluded.window_kind
                       and h.window_start = excluded.window_start), 0),
                  updated_at = now()`.pipe(Effect.asVoid),

      /**
       * Gives back `amount` of a lease (a reservation a process draws calls
       * from): the lease's row and its window's hold shrink by it. A lease
       * already swept (expired) is left alone. Run it after `settle` in the
       * same transaction, so ledger rows are locked in one order.
       */
      shrink: (leaseId: string, amount: bigint) =>
        // The ledger row is locked before the lease's row, the order `settle` takes them in: shrinking the lease
        // first while a settlement holding the ledger row waited for the lease deadlocked (a call answered 503).
        sql`with lease as (
              select workspace_id, window_kind, window_start from llm_budget_reservations where id = ${leaseId}
            ), locked as (
              select l.workspace_id from llm_budget_ledger l join lease s
                on l.workspace_id = s.workspace_id and l.window_kind = s.window_kind and l.window_start = s.window_start
               for update of l
            ), shrunk as (
              update llm_budget_reservations set amount_usd_nanos = amount_usd_nanos - ${amount.toString()}::bigint
               where id = ${leaseId} and exists (select 1 from locked)
              returning workspace_id, window_kind, window_start
            )
            update llm_budget_ledger l
               set reserved_usd_nanos = l.reserved_usd_nanos - ${amount.toString()}::bigint, updated_at = now()
              from shrunk s
             where l.workspace_id = s.workspace_id and l.window_kind = s.window_kind
               and l.window_start = s.window_start`.pipe(Effect.asVoid),

      /** Drops a reservation and its hold on the ledger (a call that settles in another window). */
      release: (reservationId: string) =>
        sql`with released as (
              delete from llm_budget_reservations where id = ${reservationId}
              returning workspace_id, window_kind, window_start, amount_usd_nanos
            )
            update llm_budget_ledger l
               set reserved_usd_nanos = l.reserved_usd_nanos - r.amount_usd_nanos, updated_at = now()
              from released r
             where l.workspace_id = r.workspace_id and l.window_kind = r.window_kind
               and l.window_start = r.window_start`.pipe(Effect.asVoid),

      /**
       * Releases every reservation past its expiry (left by a process that died mid-call). Not a function, so
       * `dieOnErrors` leaves it alone: its database failure stays a failure, a row that does not decode dies.
       */
      releaseExpired: sql`
        with released as (
          delete from llm_budget_reservations where expires_at < now()
          returning workspace_id, window_kind, window_start, amount_usd_nanos
        ), totals as (
          select workspace_id, window_kind, window_start, sum(amount_usd_nanos)::bigint as amount
            from released group by workspace_id, window_kind, window_start
        )
        update llm_budget_ledger l
           set reserved_usd_nanos = l.reserved_usd_nanos - t.amount, updated_at = now()
          from totals t
         where l.workspace_id = t.workspace_id and l.window_kind = t.window_kind and l.window_start = t.window_start
        returning l.workspace_id as id`.pipe(
        Effect.flatMap((rows) => Effect.orDie(decodeIds(rows))),
        Effect.map((rows) => rows.length)
      )
    })
  })
}) {}
