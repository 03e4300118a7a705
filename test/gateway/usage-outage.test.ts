/**
 * A call's usage record and budget settlement across a database outage: the
 * call finishes while PostgreSQL refuses writes as a failing-over primary
 * does (SQLSTATE 57P03, "cannot connect now"), and is recorded once the
 * database takes writes again, with its spend. Before, the usage writer gave
 * up after five attempts (under a second) and the record was lost: the
 * provider had been paid, and neither the usage nor the spend was recorded.
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { request } from "../support/Raw.js"
import { createKey } from "../support/Tenants.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { awaitUsage, GATEWAY_SETTINGS, gatewayTenant, monthSpend, setPrice } from "./gateway-helpers.js"
import { startStubUpstream, USAGE } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

/** More attempts than the writer made before it gave up. */
const ATTEMPTS = 8

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway usage, database outage", (it) => {
  it.effect("a call that ends while the database refuses writes is recorded, with its spend, once it is back", () =>
    Effect.gen(function* () {
      const { db, owner, gateway } = yield* gatewayTenant(stub.url)
      const key = yield* createKey(owner)
      yield* setPrice(owner, "plain", 100, 100)
      // Each refused write counts in a sequence (which no rollback undoes).
      yield* queryDatabase(db, "create sequence usage_write_attempts")
      yield* queryDatabase(
        db,
        `create or replace function refuse_usage() returns trigger language plpgsql as $$
         begin
           if new.topic = 'llm-usage' and new.key = '${owner.workspaceId}' then
             perform nextval('usage_write_attempts');
             raise exception 'the database is failing over' using errcode = '57P03';
           end if;
           return new;
         end $$`
      )
      yield* queryDatabase(
        db,
        "create trigger refuse_usage before insert on outbox for each row execute function refuse_usage()"
      )
      const attempts = Effect.map(
        queryDatabase<{ n: string }>(
          db,
          "select case when is_called then last_value else 0 end as n from usage_write_attempts"
        ),
        (rows) => Number(rows[0]!.n)
      )
      try {
        const answer = yield* request(`${gateway.routeBase}/chat_style/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key.plaintext_key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "plain", messages: [{ role: "user", content: "hi" }] })
        })
        expect(answer.status, answer.text).toBe(200)
        yield* eventually(
          Effect.filterOrFail(
            attempts,
            (n) => n >= ATTEMPTS,
            (n) => new Error(`the usage record was tried ${n} times, then no more`)
          )
        )
      } finally {
        yield* queryDatabase(db, "drop trigger refuse_usage on outbox")
      }
      const usage = yield* awaitUsage(db, owner.workspaceId, 1)
      expect([usage[0]!.prompt_tokens, usage[0]!.completion_tokens]).toEqual([
        USAGE.chat.prompt_tokens,
        USAGE.chat.completion_tokens
      ])
      const spend = yield* monthSpend(db, owner.workspaceId)
      expect(spend.spent).toBe(BigInt(usage[0]!.cost_usd_nanos))
      expect(spend.spent).toBeGreaterThan(0n)
    })
  )
})
