/**
 * An `Idempotency-Key` protects the retry of a client that gave up waiting:
 * once the first request has claimed its key, the client going away (a
 * timeout, a dropped connection) does not stop it half-way. It finishes,
 * keeps its answer under the key, and the retry answers that answer instead
 * of deciding a second time. A first request slower than the abandon time
 * (IDEMPOTENCY_ABANDONED_AFTER_MS, 3 s here) renews its claim while it runs:
 * a repeat meanwhile waits for it instead of taking the key over and
 * deciding a second time.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import { lockedTable, queryDatabase, serviceWaitsOnLocks } from "../support/Database.js"
import { createAgent, eventBody, reply } from "../support/Events.js"
import { eventually } from "../support/Eventually.js"
import { call } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

const AGENT = "support-bot"

const tracesOf = (db: string, workspaceId: string) =>
  Effect.map(
    queryDatabase<{ count: string }>(db, "select count(*)::text as count from traces where workspace_id = $1", [
      workspaceId
    ]),
    (rows) => Number(rows[0]!.count)
  )

const ABANDONED_AFTER_MS = 3_000

layer(
  testServerWithDatabase("database", { IDEMPOTENCY_ABANDONED_AFTER_MS: String(ABANDONED_AFTER_MS) }),
  SERVER_OPTIONS
)("a client gone before its answer", (it) => {
  it.effect("its retry with the same Idempotency-Key answers the first decision and writes one trace", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, AGENT)
      const body = JSON.stringify(eventBody(owner, AGENT, reply("Hello there")))
      const headers = {
        authorization: `Bearer ${owner.jwt}`,
        "content-type": "application/json",
        "idempotency-key": "retry-after-timeout"
      }

      // The first request is held at its trace's write; then its client gives up and drops the connection.
      const lock = yield* Scope.make()
      yield* lockedTable(db, "traces").pipe(Scope.extend(lock))
      const gaveUp = new AbortController()
      const first = fetch(`${base}/v1/events`, { method: "POST", headers, body, signal: gaveUp.signal }).then(
        () => "answered",
        () => "aborted"
      )
      yield* eventually(
        Effect.flatMap(serviceWaitsOnLocks(db), (waiting) => (waiting > 0 ? Effect.void : Effect.fail("not yet")))
      )
      gaveUp.abort()
      expect(yield* Effect.promise(() => first)).toBe("aborted")
      // Another request's answer: by then the server has seen the first client's connection close.
      expect((yield* call(base, "GET", "/v1/me", { token: owner.jwt })).status).toBe(200)
      yield* Scope.close(lock, Exit.void)
      // The decision the client never saw was written.
      yield* eventually(
        Effect.flatMap(tracesOf(db, owner.workspaceId), (count) => (count === 1 ? Effect.void : Effect.fail(count)))
      )

      const retry = yield* call(base, "POST", "/v1/events", { token: owner.jwt, raw: body, headers })
      expect(retry.status, retry.text).toBe(200)
      expect(yield* tracesOf(db, owner.workspaceId)).toBe(1)
      const [trace] = yield* queryDatabase<{ id: string }>(db, "select id from traces where workspace_id = $1", [
        owner.workspaceId
      ])
      expect((retry.body as { trace_id: string }).trace_id).toBe(trace!.id)
    })
  )

  it.effect("a first request still running past the abandon time keeps its key: a repeat waits, then answers it", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const db = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, AGENT)
      const body = JSON.stringify(eventBody(owner, AGENT, reply("Hello again")))
      const headers = { "idempotency-key": "slow-first-request" }

      const lock = yield* Scope.make()
      yield* lockedTable(db, "traces").pipe(Scope.extend(lock))
      const first = yield* Effect.fork(call(base, "POST", "/v1/events", { token: owner.jwt, raw: body, headers }))
      yield* eventually(
        Effect.flatMap(serviceWaitsOnLocks(db), (waiting) => (waiting > 0 ? Effect.void : Effect.fail("not yet")))
      )
      // The scenario itself: the first request's claim grows older than the abandon time.
      yield* Effect.sleep(ABANDONED_AFTER_MS + 500)
      // Still held at its write: the repeat finds the key in flight (before, it took the key over and decided
      // again, its own write then waiting on the same lock).
      const repeat = yield* call(base, "POST", "/v1/events", { token: owner.jwt, raw: body, headers })
      expect(repeat.status, repeat.text).toBe(409)
      expect((repeat.body as { error: { code: string } }).error.code).toBe("idempotency_key_in_flight")
      expect(yield* serviceWaitsOnLocks(db)).toBe(1)

      yield* Scope.close(lock, Exit.void)
      const answered = yield* Fiber.join(first)
      expect(answered.status, answered.text).toBe(200)
      const retry = yield* call(base, "POST", "/v1/events", { token: owner.jwt, raw: body, headers })
      expect((retry.body as { trace_id: string }).trace_id).toBe((answered.body as { trace_id: string }).trace_id)
      expect(yield* tracesOf(db, owner.workspaceId)).toBe(1)
    })
  )
})
