/**
 * A database that cannot serve never makes a request hang or answer 500:
 * a statement held up (here behind another session's lock) ends at the
 * service's statement timeout, and the database out of reach (the service
 * reaches it through a loopback TCP proxy the test pauses) fails at once.
 * Both answer 503 `database_unavailable` with `Retry-After`, and the same
 * requests succeed once the database serves again, with nothing lost.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { inject } from "vitest"
import { lockedTable } from "../support/Database.js"
import { agentYaml, createAgent, eventBody, propose, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { call, expectError, type JsonResponse } from "../support/Raw.js"
import { type TcpProxy, tcpProxy } from "../support/TcpProxy.js"
import { tenant } from "../support/Tenants.js"
import { freshDatabase } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithRelayOver } from "../support/TestServer.js"

const postgres = new URL(inject("postgresAdminUrl"))

class DatabaseProxy extends Context.Tag("test/DatabaseProxy")<DatabaseProxy, TcpProxy>() {}

const STATEMENT_TIMEOUT_MS = 1_000

const serverBehindProxy = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* freshDatabase
    const proxy = yield* tcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) })
    return Layer.mergeAll(
      testServerWithRelayOver("database", proxy.through(url), {
        DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS)
      }),
      Layer.succeed(DatabaseProxy, proxy),
      Layer.succeed(TestDatabaseUrl, url)
    )
  })
)

const expectUnavailable = (answer: JsonResponse) => {
  expectError(answer, 503, "database_unavailable")
  expect(answer.headers.get("retry-after")).toBe("1")
}

const agentIdsOf = (answer: JsonResponse) => {
  expect(answer.status).toBe(200)
  return (answer.body as { agents: ReadonlyArray<{ agent_id: string }> }).agents.map((agent) => agent.agent_id)
}

layer(serverBehindProxy, SERVER_OPTIONS)("a database that cannot serve", (it) => {
  it.effect(
    "a statement held up behind a lock answers 503 at the statement timeout; the same requests pass after",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const url = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "kept")
        const list = call(base, "GET", "/v1/agents", { token: owner.jwt })
        const create = call(base, "POST", "/v1/agents", {
          token: owner.jwt,
          raw: agentYaml("added"),
          contentType: "application/yaml"
        })

        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* lockedTable(url, "agents")
            const started = Date.now()
            expectUnavailable(yield* list)
            // Answered at the statement timeout, not held for as long as the lock is.
            expect(Date.now() - started).toBeGreaterThanOrEqual(STATEMENT_TIMEOUT_MS - 100)
            expectUnavailable(yield* create)
          })
        )

        expect(agentIdsOf(yield* list)).toEqual(["kept"])
        expect((yield* create).status).toBe(201)
        expect([...agentIdsOf(yield* list)].sort()).toEqual(["added", "kept"])
      })
  )

  it.effect("the database out of reach: reads and decisions answer 503 at once, and pass again when it is back", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const proxy = yield* DatabaseProxy
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, "survivor")
      yield* propose(base, owner, "survivor", reply("warm")) // the decision path's caches are warm
      const list = call(base, "GET", "/v1/agents", { token: owner.jwt })
      const decide = call(base, "POST", "/v1/events", {
        token: owner.jwt,
        body: eventBody(owner, "survivor", reply("during the outage"))
      })

      const ready = call(base, "GET", "/readyz", {})

      yield* proxy.pause
      const [answers, readiness] = yield* Effect.ensuring(Effect.all([Effect.all([list, decide]), ready]), proxy.resume)
      answers.forEach(expectUnavailable)
      // The unauthenticated probe says what is out of reach, not the driver's error (addresses, ports, internals).
      expectError(readiness, 503, "not_ready")
      expect(readiness.text).toContain("database")
      expect(readiness.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|Error|SqlError/)

      expect(yield* until(Effect.map(list, agentIdsOf), "30 seconds")).toEqual(["survivor"])
      expect((yield* propose(base, owner, "survivor", reply("after the outage"))).effect).toBe("permit")
    })
  )

  it.effect(
    "a database that stops answering on open connections (half-open): 503 soon after the statement timeout, not a hang",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const proxy = yield* DatabaseProxy
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "steady")
        // Warm caches and pooled connections: the next statements go out on connections that stay open.
        yield* propose(base, owner, "steady", reply("warm"))
        const list = call(base, "GET", "/v1/agents", { token: owner.jwt })
        const decide = call(base, "POST", "/v1/events", {
          token: owner.jwt,
          body: eventBody(owner, "steady", reply("while the database is silent"))
        })
        expect(agentIdsOf(yield* list)).toEqual(["steady"])

        yield* proxy.freeze
        // Before, both waited for the OS to give up on TCP (the call's 15 s deadline failed first).
        const answers = yield* Effect.ensuring(Effect.all([list, decide], { concurrency: "unbounded" }), proxy.thaw)
        answers.forEach(expectUnavailable)

        expect(yield* until(Effect.map(list, agentIdsOf), "30 seconds")).toEqual(["steady"])
        expect((yield* propose(base, owner, "steady", reply("after"))).effect).toBe("permit")
      }),
    60_000
  )
})
