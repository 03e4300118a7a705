/**
 * `Idempotency-Key` on `POST /v1/events` and run-event appends (migration
 * 0024): a repeat within 24 h answers the first result and writes nothing,
 * concurrent duplicates write once, a key is its workspace's own, and the
 * same key with another request (another environment's credential included)
 * is refused.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { queryDatabase } from "../support/Database.js"
import { createAgent, eventBody, reply } from "../support/Events.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createEnvironment, createKey, type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

const AGENT = "support-bot"

const countIn = (table: "traces" | "run_events", workspaceId: string) =>
  Effect.flatMap(TestDatabaseUrl, (db) =>
    Effect.map(
      queryDatabase<{ count: string }>(db, `select count(*)::text as count from ${table} where workspace_id = $1`, [
        workspaceId
      ]),
      (rows) => Number(rows[0]!.count)
    )
  )

const decide = (base: string, owner: Tenant, content: string, key?: string) =>
  call(base, "POST", "/v1/events", {
    token: owner.jwt,
    body: eventBody(owner, AGENT, reply(content)),
    headers: key === undefined ? {} : { "idempotency-key": key }
  })

const setUp = Effect.gen(function* () {
  const base = yield* baseUrl
  const owner = yield* tenant(base)
  yield* createAgent(base, owner, AGENT)
  return { base, owner }
})

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("idempotency keys", (it) => {
  it.effect("a repeated decision answers the first one and writes one trace; another request is refused", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      const first = yield* decide(base, owner, "Hello", "key-1")
      expect(first.status).toBe(200)
      const again = yield* decide(base, owner, "Hello", "key-1")
      expect([again.status, again.body]).toEqual([200, first.body])
      expect(yield* countIn("traces", owner.workspaceId)).toBe(1)

      expectError(yield* decide(base, owner, "Something else", "key-1"), 422, "idempotency_key_reused")
      // Without a key every request decides anew.
      yield* decide(base, owner, "Hello")
      yield* decide(base, owner, "Hello")
      expect(yield* countIn("traces", owner.workspaceId)).toBe(3)
      expectValidation(yield* decide(base, owner, "Hello", "x".repeat(256)), "headers.idempotency-key")
    })
  )

  it.effect("the same key and body from another environment's runtime key is another request", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      const staging = yield* createEnvironment(owner)
      const production = yield* createKey(owner, { environment_id: owner.defaultEnvironmentId })
      const stagingKey = yield* createKey(owner, { environment_id: staging.id })
      // The principal's environment is left out: each runtime key completes it with its own.
      const { principal, ...rest } = eventBody(owner, AGENT, reply("Hello"))
      const body = { ...rest, principal: { agent_id: principal.agent_id } }
      const send = (token: string) =>
        call(base, "POST", "/v1/events", { token, body, headers: { "idempotency-key": "shared-key" } })
      const first = yield* send(production.plaintext_key)
      expect(first.status, first.text).toBe(200)
      expectError(yield* send(stagingKey.plaintext_key), 422, "idempotency_key_reused")
      expect([(yield* send(production.plaintext_key)).body]).toEqual([first.body])
      expect(yield* countIn("traces", owner.workspaceId)).toBe(1)
    })
  )

  it.effect("concurrent duplicates write once; a key belongs to its workspace", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      const answers = yield* Effect.all(
        Array.from({ length: 8 }, () => decide(base, owner, "Hi there", "same-key")),
        { concurrency: "unbounded" }
      )
      expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 8 }, () => 200))
      expect(new Set(answers.map((answer) => answer.text)).size).toBe(1)
      expect(yield* countIn("traces", owner.workspaceId)).toBe(1)

      const other = yield* tenant(base)
      yield* createAgent(base, other, AGENT)
      const theirs = yield* decide(base, other, "Hi there", "same-key")
      expect(theirs.status).toBe(200)
      expect(yield* countIn("traces", other.workspaceId)).toBe(1)
    })
  )

  it.effect("a repeated run-event append answers the first event and appends once", () =>
    Effect.gen(function* () {
      const { base, owner } = yield* setUp
      const run = yield* owner.api.runs.createRun({ payload: { agent_id: AGENT, kind: "workflow" } })
      const append = () =>
        call(base, "POST", `/v1/runs/${run.id}/events`, {
          token: owner.jwt,
          body: { kind: "tool_call", label: "lookup" },
          headers: { "idempotency-key": "append-1" }
        })
      const first = yield* append()
      const again = yield* append()
      expect([first.status, again.status]).toEqual([201, 201])
      expect(again.body).toEqual(first.body)
      expect(yield* countIn("run_events", owner.workspaceId)).toBe(1)
      // A failure is not kept: the same key for a missing run fails each time.
      const missing = () =>
        call(base, "POST", "/v1/runs/run_missing/events", {
          token: owner.jwt,
          body: { kind: "tool_call" },
          headers: { "idempotency-key": "append-2" }
        })
      expectError(yield* missing(), 404)
      expectError(yield* missing(), 404)
    })
  )
})
