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
import { queryDatabase } from "../support/Database.js"
import { tenant } from "../support/Tenants.js"
import { startChildService } from "./child-service.js"
import { createAgent, eventBody, propose, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"

/**
 * A POST whose body is sent in two halves: the second only when `release` resolves. It asks for
 * `100 Continue`, which Node sends as it hands the request to the service: `reached` is called then
 * (the request is in flight), and the first half follows.
 */
const slowPost = (url: string, token: string, body: string, release: Promise<void>, reached: () => void) =>
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
          "content-length": String(Buffer.byteLength(body)),
          expect: "100-continue"
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
    req.once("continue", () => {
      req.write(body.slice(0, half))
      reached()
      void release.then(() => req.end(body.slice(half)))
    })
  })

const committedOffsets = (topicPrefix: string) =>
  Effect.promise(async () => {
    const kafka = new Kafka({
      clientId: "shutdown-test",
      brokers: [inject("kafkaBrokers")],
      logLevel: logLevel.NOTHING
    })
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
      yield* createAgent(base, owner, "bot")
      const run = yield* owner.api.runs.createRun({ payload: { agent_id: "bot", kind: "chat_session" } })
      for (let i = 0; i < 4; i++) yield* propose(base, owner, "bot", reply(`answer ${i}`), { run_id: run.id })
      // The run-counters consumer has applied the four decisions.
      yield* until(
        Effect.map(owner.api.runs.getRun({ path: { id: run.id } }), (detail) => expect(detail.run.trace_count).toBe(4)),
        "30 seconds"
      )

      let release = () => {}
      const released = new Promise<void>((resolve) => (release = resolve))
      // Raw: a request whose body arrives in two halves, around SIGTERM.
      // A decision: it needs the API's services (the group-commit decision writer) until it is answered.
      let reached = () => {}
      const inService = new Promise<void>((resolve) => (reached = resolve))
      const inFlight = slowPost(
        `${base}/v1/events`,
        owner.jwt,
        JSON.stringify(eventBody(owner, "bot", reply(`sent while stopping ${"x".repeat(2000)}`), { run_id: run.id })),
        released,
        reached
      )
      yield* Effect.promise(() => inService) // the request is in the service's hands; its body is half sent
      service.child.kill("SIGTERM")
      yield* until(
        Effect.sync(() => expect(service.output()).toContain("shutdown: draining requests in flight")),
        "30 seconds"
      )
      const drainLine = service.logLines().find((line) => line["message"] === "shutdown: draining requests in flight")
      expect(drainLine?.["in_flight"]).toBe(1)

      // A new request while draining is turned away, and told to close the connection (raw: the connection header).
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
      expect(
        order
          .map((message) => messages.indexOf(message))
          .every((index, i, all) => index >= 0 && (i === 0 || index > all[i - 1]!)),
        service.output().slice(-4000)
      ).toBe(true)
      expect([0, 130, 143, "SIGTERM"]).toContain(exit)

      // The answered decision is durable: its trace is stored, its event published or still in the outbox.
      const db = service.databaseUrl
      const traces = yield* queryDatabase(db, "select id from traces where run_id = $1", [run.id])
      expect(traces.map((row) => row["id"])).toContain(decision.trace_id)
      expect(traces).toHaveLength(5)
      const pending = yield* queryDatabase<{ n: string }>(
        db,
        "select count(*)::text as n from outbox where topic = 'decisions'"
      )
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

it.live(
  "a request still in flight when the drain limit is reached does not hold the shutdown: its connection is closed",
  () =>
    Effect.gen(function* () {
      // The request timeout is far longer than the test: only the shutdown itself can end the request.
      const service = yield* startChildService({ SHUTDOWN_DRAIN_SECONDS: "2", HTTP_REQUEST_TIMEOUT_MS: "600000" })
      const owner = yield* tenant(service.baseUrl)
      let reached = () => {}
      const inService = new Promise<void>((resolve) => (reached = resolve))
      // Its second half never comes.
      const stuck = slowPost(
        `${service.baseUrl}/v1/events`,
        owner.jwt,
        JSON.stringify(eventBody(owner, "bot", reply("never finished"))),
        new Promise<void>(() => {}),
        reached
      ).then(
        (answer) => `answered ${answer.status}`,
        (error: Error) => `failed: ${error.message}`
      )
      yield* Effect.promise(() => inService)
      service.child.kill("SIGTERM")
      const exit = yield* Effect.promise(() => service.exited)
      expect([0, 130, 143, "SIGTERM"]).toContain(exit)
      // The client saw its connection closed rather than an answer.
      expect(yield* Effect.promise(() => stuck)).toMatch(/^failed: /)
      const messages = service.logLines().map((line) => line["message"])
      expect(messages).toContain("shutdown: drain time limit reached")
      expect(messages).toContain("all-in-one stopped")
    }).pipe(Effect.scoped),
  90_000
)
