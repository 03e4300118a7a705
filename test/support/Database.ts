/** Direct reads (and writes) of the database behind a test server, e.g. the URL a `testServerWithDatabase` server provides as `TestDatabaseUrl`. */
import { Effect } from "effect"
import pg from "pg"

/** Runs one query against the database at `url`; answers the rows. */
export const queryDatabase = <Row = Record<string, unknown>>(
  url: string,
  text: string,
  values: ReadonlyArray<unknown> = []
) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query(text, [...values])).rows as Array<Row>
    } finally {
      await client.end()
    }
  })

/** Another session holding `table` locked against every use, for the life of the scope. */
export const lockedTable = (url: string, table: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      await client.query("begin")
      await client.query(`lock table ${table} in access exclusive mode`)
      return client
    }),
    (client) => Effect.promise(() => client.query("rollback").finally(() => client.end()))
  )

/** How many of the service's statements wait on a lock; with `readsOf`, only its reads of that table. */
export const serviceWaitsOnLocks = (url: string, readsOf?: string) =>
  Effect.map(
    queryDatabase<{ n: string }>(
      url,
      `select count(*)::text as n from pg_stat_activity
        where datname = current_database() and application_name = 'guardrail-service' and wait_event_type = 'Lock'
        ${readsOf === undefined ? "" : "and query ilike '%' || $1 || '%' and query not ilike '%insert into ' || $1 || '%'"}`,
      readsOf === undefined ? [] : [readsOf]
    ),
    (rows) => Number(rows[0]!.n)
  )

/** Another session holding the rows `select ... for update` finds locked, for the life of the scope. */
export const lockedRows = (url: string, selectForUpdate: string, values: ReadonlyArray<unknown> = []) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      await client.query("begin")
      await client.query(selectForUpdate, [...values])
      return client
    }),
    (client) => Effect.promise(() => client.query("rollback").finally(() => client.end()))
  )

/**
 * Of `workspaceIds`, the first in id order (the order the retention tasks take workspaces in) refuses every
 * delete of its rows of `table` (a trigger raises), for the life of the scope; answers `[refusing, the rest]`.
 */
export const firstRefusesDeletes = <W extends { readonly workspaceId: string }>(
  url: string,
  table: string,
  workspaces: ReadonlyArray<W>
) =>
  Effect.gen(function* () {
    const [refusing, ...rest] = [...workspaces].sort((a, b) => (a.workspaceId < b.workspaceId ? -1 : 1))
    const name = `refuse_delete_${table}`
    yield* Effect.acquireRelease(
      queryDatabase(
        url,
        `create function ${name}() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$;
         create trigger ${name} before delete on ${table} for each row
           when (old.workspace_id = '${refusing!.workspaceId}') execute function ${name}()`
      ),
      () => queryDatabase(url, `drop trigger ${name} on ${table}; drop function ${name}()`)
    )
    return [refusing!, rest] as const
  })
