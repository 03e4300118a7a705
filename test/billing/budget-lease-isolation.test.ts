/**
 * Budget leases are taken one at a time per budget window, not per process:
 * while one workspace's strict gateway call waits on its ledger row (here a
 * test session holds the row's lock), another workspace's strict call is
 * admitted at once instead of waiting behind it.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import pg from "pg"
import { queryDatabase } from "../support/Database.js"
import { until } from "../support/Eventually.js"
import { request } from "../support/Raw.js"
import { createKey } from "../support/Tenants.js"
import { SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS, gatewayTenant, setBudget, setPrice } from "../gateway/gateway-helpers.js"
import { startStubUpstream } from "../gateway/stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

/** A tenant with a route, a price of 1 cent per 1000 output tokens of model `budget`, a budget and a key. */
const budgeted = Effect.gen(function* () {
  const { gateway, owner } = yield* gatewayTenant(stub.url)
  const key = yield* createKey(owner)
  yield* setPrice(owner, "budget", 0, 1000)
  yield* setBudget(owner, 1_000_000, "month")
  const strictCall = (maxTokens: number) =>
    request(`${gateway.routeBase}/chat_style/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.plaintext_key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "budget", max_tokens: maxTokens, messages: [{ role: "user", content: "hi" }] }),
      signal: AbortSignal.timeout(60_000)
    })
  return { owner, strictCall }
})

/** A session holding the lock of the workspace's month ledger row until the scope ends. */
const holdLedgerRow = (db: string, workspaceId: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: db })
      await client.connect()
      await client.query("begin")
      await client.query(
        "select * from llm_budget_ledger where workspace_id = $1 and window_kind = 'month' for update",
        [workspaceId]
      )
      return client
    }),
    (client) => Effect.promise(() => client.query("rollback").then(() => client.end()))
  )

/** Statements of the database waiting on a lock of `llm_budget_ledger`. */
const ledgerWaits = (db: string) =>
  Effect.map(
    queryDatabase<{ waiting: number }>(
      db,
      `select count(*)::int as waiting from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query like '%llm_budget_ledger%'`
    ),
    (rows) => rows[0]!.waiting
  )

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("budget lease isolation", (it) => {
  it.scoped("a workspace's call waiting on its ledger row does not hold up another workspace's admission", () =>
    Effect.gen(function* () {
      const db = yield* TestDatabaseUrl
      const stuck = yield* budgeted
      const other = yield* budgeted
      // The first call creates the ledger row and a lease of 20 of its worst cases.
      expect((yield* stuck.strictCall(1000)).status).toBe(200)
      yield* holdLedgerRow(db, stuck.owner.workspaceId)
      // A worst case 100 times larger fits no lease held: it reserves on the locked row, and waits.
      const waiting = yield* Effect.fork(stuck.strictCall(100_000))
      yield* until(
        Effect.map(ledgerWaits(db), (waits) => expect(waits).toBeGreaterThanOrEqual(1)),
        "30 seconds"
      )

      const admitted = yield* other.strictCall(1000)
      expect(admitted.status, admitted.text).toBe(200)
      // Answered while the first workspace's reservation still waits on its row.
      expect(yield* ledgerWaits(db)).toBeGreaterThanOrEqual(1)
      expect(waiting.unsafePoll()).toBeNull()
      yield* Fiber.interrupt(waiting)
    })
  )
})
