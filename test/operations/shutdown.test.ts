/**
 * Graceful shutdown of the real process: SIGTERM arrives while a request is
 * in flight (its body still arriving). The service turns new requests away
 * (503 `shutting_down`), finishes the in-flight one (its event is stored and
 * answered 201), commits its consumers' positions (the run-counters group's
 * committed offsets cover every decision) and exits after its finalizers.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Kafka, logLevel } from "kafkajs"
import { request as httpRequest } from "node:http"
import { inject } from "vitest"
import { call, expectStatus, queryDatabase, tenant } from "../identity/http-helpers.js"
import { eventBody, propose, reply, until } from "../authorization-http/event-helpers.js"
import { startChildService } from "./child-service.js"

/** A POST whose body is sent in two halves: the second only when `release` resolves. */
const slowPost = (url: string, token: string, body: string, release: Promise<void>) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const target = new URL(url)
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body))
        },
        agent: false
      },
      (res) => {
        let text = ""
        res.on("data", (chunk: Buffer) => (text += chunk.toString()))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }))
        res.on("error", reject)
      }
    )
    req.on("error", reject)
    const half = Math.floor(body.length / 2)
    req.write(body.slice(0, half))
    void release.then(() => req.end(body.slice(half)))
  })

const committedOffsets = (topicPrefix: string) =>
  Effect.promise(async () => {
    const kafka = new Kafka({ clientId: "shutdown-test", brokers: [inject("kafkaBrokers")], logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    await admin.connect()
    try {
      const topic = `${topicPrefix}decisions`
      const ends = await admin.fetchTopicOffsets(topic)
      const [committed] = await admin.fetchOffsets({ groupId: `${topicPrefix}run-counters`, topics: [topic] })
      return {
        end: ends.reduce((sum, partition) => sum + Number(partition.high), 0),
        committed: committed!.partitions.reduce((sum, partition) => sum + Math.max(0, Number(partition.offset)), 0)
      }
    } finally {
      await admin.disconnect()
    }
  })

it.live(
  "SIGTERM during a slow request: new requests get 503, the in-flight one completes, positions are committed",
  () =>
    Effect.gen(function* () {
      const service = yield* startChildService({ SHUTDOWN_DRAIN_SECONDS: "15" })
      const base = service.baseUrl
      const owner = yield* tenant(base)
      const run = expectStatus(
        yield* call(base, "POST", "/v1/runs", { token: owner.jwt, body: { agent_id: "bot", kind: "chat_session" } }),
        201
      ) as { id: string }
      for (let i = 0; i < 4; i++) yield* propose(base, owner, "bot", reply(`answer ${i}`), { run_id: run.id })
      // The run-counters consumer has applied the four decisions.
      yield* until(
        Effect.map(call(base, "GET", `/v1/runs/${run.id}`, { token: owner.jwt }), (response) =>
          expect(expectStatus(response, 200).run.trace_count).toBe(4)
        ),
        "30 seconds"
      )

      let release = () => {}
      const released = new Promise<void>((resolve) => (release = resolve))
      // A decision: it needs the API's services (the group-commit decision writer) until it is answered.
      const inFlight = slowPost(
        `${base}/v1/events`,
        owner.jwt,
        JSON.stringify(eventBody(owner, "bot", reply(`sent while stopping ${"x".repeat(2000)}`), { run_id: run.id })),
        released
      )
      yield* Effect.sleep("300 millis") // the request has reached the handler; its body is half sent
      service.child.kill("SIGTERM")
      yield* until(
        Effect.sync(() => expect(service.output()).toContain("shutdown: draining requests in flight")),
        "10 seconds"
      )
      const drainLine = service.logLines().find((line) => line["message"] === "shutdown: draining requests in flight")
      expect(drainLine?.["in_flight"]).toBe(1)

      // A new request while draining is turned away, and told to close the connection.
      const refused = yield* Effect.promise(() =>
        fetch(`${base}/healthz`).then(
          async (response) => ({
            status: response.status,
            connection: response.headers.get("connection"),
            body: (await response.json()) as { error: { code: string } }
          }),
          () => ({ status: 0, connection: null, body: { error: { code: "connection refused" } } })
        )
      )
      expect(refused.status).toBe(503)
      expect(refused.body.error.code).toBe("shutting_down")
      expect(refused.connection).toBe("close")

      // The in-flight request completes normally.
      release()
      const answer = yield* Effect.promise(() => inFlight)
      expect(answer.status, answer.text).toBe(200)
      const decision = JSON.parse(answer.text) as { effect: string; trace_id: string; findings: Array<unknown> }
      expect([decision.effect, decision.findings]).toEqual(["permit", []]) // decided, not failed closed

      const exit = yield* Effect.promise(() => service.exited)
      const messages = service.logLines().map((line) => line["message"])
      const order = ["shutdown: draining requests in flight", "shutdown: requests drained", "all-in-one stopped"]
      expect(order.map((message) => messages.indexOf(message)).every((index, i, all) => index >= 0 && (i === 0 || index > all[i - 1]!)), service.output().slice(-4000)).toBe(true)
      expect([0, 130, 143, "SIGTERM"]).toContain(exit)

      // The answered decision is durable: its trace is stored, its event published or still in the outbox.
      const db = service.databaseUrl
      const traces = yield* queryDatabase(db, "select id from traces where run_id = $1", [run.id])
      expect(traces.map((row) => row["id"])).toContain(decision.trace_id)
      expect(traces).toHaveLength(5)
      const pending = yield* queryDatabase<{ n: string }>(db, "select count(*)::text as n from outbox where topic = 'decisions'")
      const offsets = yield* committedOffsets(service.topicPrefix)
      // No decision event is lost: each is on the topic or still in the outbox. A stop
      // between the relay's publish and its delete leaves a row that is also on the
      // topic (at-least-once; consumers dedupe by event id), hence no upper bound on the sum.
      expect(offsets.end + Number(pending[0]!.n)).toBeGreaterThanOrEqual(5)
      expect(offsets.end).toBeLessThanOrEqual(5)
      // Every decision the run-counters consumer applied has its position committed (none would be re-read).
      const applied = yield* queryDatabase<{ n: string }>(
        db,
        "select count(*)::text as n from processed_events where group_id = 'run-counters'"
      )
      expect(offsets.committed).toBeGreaterThanOrEqual(4)
      expect(offsets.committed).toBe(Number(applied[0]!.n))
    }).pipe(Effect.scoped),
  180_000
)
