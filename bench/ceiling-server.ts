/**
 * The ceiling server of bench/ceiling.ts: the least any Node service must do
 * per request for the authorization and ingest goals, written as plain
 * node:http with no framework, so its figures bound what the real service
 * could reach on this machine. Modes (argv[2]):
 *  - echo:          the bare JSON echo of bench/authorize.ts, in its own process;
 *  - decide:        parse, runtime-key hash lookup, 200 literal policies, intent
 *                   hash, Ed25519-signed receipt (JWS), JSON answer; nothing stored;
 *  - pg:            decisions (`POST /v1/events`) as `decide`, plus the trace,
 *                   receipt and outbox row committed to PostgreSQL before the
 *                   answer (group commit, one writer); run events
 *                   (`POST /v1/runs/:id/events`) appended with a gap-free
 *                   per-run sequence (group commit: bump the runs' counters,
 *                   insert the events and outbox rows);
 *  - decide-kafka:  decide, plus the decision acknowledged by Kafka (acks=all,
 *                   batched) before the answer, nothing in PostgreSQL;
 *  - pipeline:      pg, on emptied tables, for bench/ceiling-pipeline.ts to
 *                   relay and aggregate (a separate process);
 *  - gateway-screened: a chat-completions call screened as bench/gateway.ts's
 *                   `guardrail-screened` target is: the last user message
 *                   decided (`decide` plus eight personal-data and injection
 *                   regexes) and stored as in `pg` while the call goes to the
 *                   provider at STUB_URL (keep-alive), then the reply decided
 *                   and stored the same way before the answer, which carries
 *                   both decisions (`guardrail`) and x-guardrail-* headers.
 * In the other modes nothing relays the outbox and no consumer runs.
 * Env: PORT, DATABASE_URL, KAFKA_BROKERS.
 */
import { createHash, generateKeyPairSync, sign } from "node:crypto"
import { Agent, createServer, request as httpRequest, type ServerResponse } from "node:http"
import { Kafka, logLevel } from "kafkajs"
import pg from "pg"
import { uuidv7 } from "../src/platform/Ids.js"

const mode = process.argv[2] ?? "echo"
const port = Number(process.env["PORT"] ?? 0)
const PHRASES = Array.from({ length: 200 }, (_, i) => `forbidden phrase ${String(i).padStart(3, "0")}`)
const KEYS = new Map([[createHash("sha256").update("gr_live_ceiling").digest("hex"), "ws_ceiling"]])
const { privateKey } = generateKeyPairSync("ed25519")
const HEADER = Buffer.from(JSON.stringify({ alg: "EdDSA", typ: "guardrail-receipt+jws" })).toString("base64url")

/** What `gateway-screened` checks besides the phrases: card, IBAN, SSN, e-mail, phone and three injection tells. */
const SCREEN_PATTERNS = [
  /\b(?:\d[ -]?){13,19}\b/,
  /\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){3,7}\b/,
  /\b\d{3}-\d{2}-\d{4}\b/,
  /[\w.+-]+@[\w-]+\.[\w.]+/,
  /\+?\d[\d ()-]{8,}\d/,
  /ignore (?:all )?(?:previous|prior) instructions/i,
  /you are now (?:in )?developer mode/i,
  /reveal (?:your|the) system prompt/i
]

const SCHEMA = `
create table if not exists c_traces (id text primary key, workspace_id text not null, agent_id text not null,
  session_id text, run_id text, intent_id text not null, decision text not null, payload jsonb not null,
  created_at timestamptz not null default now());
create index if not exists c_traces_created on c_traces (workspace_id, created_at desc, id desc);
create index if not exists c_traces_session on c_traces (workspace_id, session_id, created_at desc);
create index if not exists c_traces_run on c_traces (workspace_id, run_id, created_at desc);
create table if not exists c_receipts (id text primary key, workspace_id text not null, trace_id text not null,
  jws text not null, created_at timestamptz not null default now());
create table if not exists c_outbox (id bigserial primary key, event_id uuid not null unique, topic text not null,
  key text not null, value text not null, created_at timestamptz not null default now());
create table if not exists c_runs (id text primary key, last_sequence integer not null default 0);
create table if not exists c_run_events (id text primary key, run_id text not null references c_runs (id),
  sequence integer not null, kind text not null, metadata jsonb not null, created_at timestamptz not null default now(),
  unique (run_id, sequence));
insert into c_runs (id) select 'run_' || g from generate_series(0, 99) g on conflict do nothing;`

let seq = 0
const id = (prefix: string) => `${prefix}_${(++seq).toString(36)}${Math.random().toString(36).slice(2, 12)}`

const answer = (response: ServerResponse, status: number, body: string) => {
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  response.end(body)
}

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined

/** The synchronous part of a decision; answers the response body and what would be stored. */
const decide = (body: unknown, authorization: string | undefined) => {
  const started = performance.now()
  const workspace = KEYS.get(createHash("sha256").update((authorization ?? "").slice(7)).digest("hex"))
  if (workspace === undefined) return undefined
  const content = String(field(field(body, "action"), "content") ?? "")
  const findings = PHRASES.filter((phrase) => content.includes(phrase))
  const effect = findings.length > 0 ? "deny" : "permit"
  const traceId = id("trc")
  const receiptId = id("rcpt")
  const intentId = `int_${createHash("sha256").update(JSON.stringify([workspace, field(body, "principal"), field(body, "action")])).digest("hex").slice(0, 32)}`
  const receipt = { receipt_id: receiptId, trace_id: traceId, intent_id: intentId, workspace_id: workspace, effect, findings, issued_at: new Date().toISOString() }
  const input = `${HEADER}.${Buffer.from(JSON.stringify(receipt)).toString("base64url")}`
  const jws = `${input}.${sign(null, Buffer.from(input), privateKey).toString("base64url")}`
  const response = JSON.stringify({ effect, domain: "content", reason: effect, intent_id: intentId, receipt_id: receiptId, trace_id: traceId, latency_ms: 0, findings, applied_grant: null, approval: null, lease: null, status: "decided", transformed_value: null })
  const principal = field(body, "principal")
  const latencyMs = performance.now() - started
  return { workspace, traceId, receiptId, intentId, effect, jws, response, latencyMs, agent: String(field(principal, "agent_id") ?? ""), environment: String(field(principal, "environment_id") ?? "") }
}

type Decided = NonNullable<ReturnType<typeof decide>>

/** One writer: whatever queued while the previous batch committed goes in the next. */
const groupCommit = <T>(write: (batch: Array<T>) => Promise<void>) => {
  let queue: Array<{ item: T; done: (ok: boolean) => void }> = []
  let writing = false
  const flush = async () => {
    if (writing || queue.length === 0) return
    writing = true
    const batch = queue
    queue = []
    const ok = await write(batch.map((entry) => entry.item)).then(() => true, () => false)
    for (const entry of batch) entry.done(ok)
    writing = false
    void flush()
  }
  return (item: T, done: (ok: boolean) => void) => {
    queue.push({ item, done })
    setImmediate(flush)
  }
}

const main = async () => {
  const pool = new pg.Pool({ connectionString: process.env["DATABASE_URL"], max: 4 })
  if (mode === "pg" || mode === "pipeline" || mode === "gateway-screened") await pool.query(SCHEMA)
  if (mode === "pipeline") await pool.query("truncate c_outbox, c_traces, c_receipts, c_run_events")
  const inTransaction = async (work: (client: pg.PoolClient) => Promise<void>) => {
    const client = await pool.connect()
    try {
      await client.query("begin")
      await work(client)
      await client.query("commit")
    } catch (error) {
      await client.query("rollback")
      throw error
    } finally {
      client.release()
    }
  }
  // The stream message of each stored event; acked_at is stamped at the commit the answer waits for.
  const decisionMessage = (d: Decided, ackedAt: number) => ({
    event_id: uuidv7(),
    workspace_id: d.workspace,
    series: "decisions",
    dims: { agent_id: d.agent, environment_id: d.environment, effect: d.effect, domain: "content" },
    latency_ms: d.latencyMs,
    acked_at: ackedAt
  })
  const storeDecisions = groupCommit<Decided & { payload: string }>((batch) =>
    inTransaction(async (client) => {
      const messages = batch.map((d) => decisionMessage(d, Date.now()))
      await client.query(
        `insert into c_traces (id, workspace_id, agent_id, intent_id, decision, payload)
         select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[])`,
        [batch.map((d) => d.traceId), batch.map((d) => d.workspace), batch.map((d) => d.agent), batch.map((d) => d.intentId), batch.map((d) => d.effect), batch.map((d) => d.payload)]
      )
      await client.query(
        `insert into c_receipts (id, workspace_id, trace_id, jws) select * from unnest($1::text[], $2::text[], $3::text[], $4::text[])`,
        [batch.map((d) => d.receiptId), batch.map((d) => d.workspace), batch.map((d) => d.traceId), batch.map((d) => d.jws)]
      )
      await client.query(
        `insert into c_outbox (event_id, topic, key, value) select * from unnest($1::uuid[], $2::text[], $3::text[], $4::text[])`,
        [messages.map((m) => m.event_id), batch.map(() => "decisions"), batch.map((d) => d.workspace), messages.map((m) => JSON.stringify(m))]
      )
    })
  )
  const storeRunEvents = groupCommit<{ runId: string; kind: string; metadata: string; eventId: string }>((batch) =>
    inTransaction(async (client) => {
      const ackedAt = Date.now()
      const messages = batch.map((event) => ({
        event_id: uuidv7(),
        workspace_id: "ws_ceiling",
        series: "run_events",
        dims: { run_kind: "chat_session", event_kind: event.kind },
        acked_at: ackedAt
      }))
      const counts = new Map<string, number>()
      for (const event of batch) counts.set(event.runId, (counts.get(event.runId) ?? 0) + 1)
      const runs = [...counts.keys()].sort()
      const bumped = await client.query<{ id: string; last_sequence: number }>(
        `update c_runs r set last_sequence = r.last_sequence + n.count from unnest($1::text[], $2::int[]) as n(id, count)
         where r.id = n.id returning r.id, r.last_sequence`,
        [runs, runs.map((run) => counts.get(run)!)]
      )
      const next = new Map(bumped.rows.map((row) => [row.id, row.last_sequence - counts.get(row.id)! + 1]))
      const sequences = batch.map((event) => {
        const sequence = next.get(event.runId)!
        next.set(event.runId, sequence + 1)
        return sequence
      })
      await client.query(
        `insert into c_run_events (id, run_id, sequence, kind, metadata) select * from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::jsonb[])`,
        [batch.map((event) => event.eventId), batch.map((event) => event.runId), sequences, batch.map((event) => event.kind), batch.map((event) => event.metadata)]
      )
      await client.query(
        `insert into c_outbox (event_id, topic, key, value) select * from unnest($1::uuid[], $2::text[], $3::text[], $4::text[])`,
        [messages.map((m) => m.event_id), batch.map(() => "run-events"), batch.map((event) => event.runId), messages.map((m) => JSON.stringify(m))]
      )
    })
  )
  let produce: ((decided: Decided, done: (ok: boolean) => void) => void) | undefined
  if (mode === "decide-kafka") {
    const kafka = new Kafka({ brokers: (process.env["KAFKA_BROKERS"] ?? "127.0.0.1:9092").split(","), logLevel: logLevel.NOTHING })
    const topic = `ceiling-${Date.now()}`
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] })
    await admin.disconnect()
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    produce = groupCommit<Decided>((batch) =>
      producer
        .send({ topic, acks: -1, messages: batch.map((d) => ({ key: d.workspace, value: JSON.stringify({ trace_id: d.traceId, jws: d.jws, response: d.response }) })) })
        .then(() => undefined)
    )
  }

  const upstream = process.env["STUB_URL"] === undefined ? undefined : new URL(process.env["STUB_URL"])
  const upstreamAgent = new Agent({ keepAlive: true, maxSockets: 512 })
  /** One text decided (phrases and patterns, signed receipt) and stored; `done` once durable. */
  const screen = (content: string, done: (decided: Decided | undefined) => void) => {
    const decided = decide({ principal: { agent_id: "bench-bot" }, action: { content } }, "Bearer gr_live_ceiling")!
    const flagged = SCREEN_PATTERNS.filter((pattern) => pattern.test(content)).length
    const payload = JSON.stringify({ content, flagged, response: decided.response })
    storeDecisions({ ...decided, payload }, (ok) => done(ok ? decided : undefined))
  }
  const forward = (text: string, done: (status: number, body: string) => void) => {
    const call = httpRequest(
      upstream!,
      { method: "POST", agent: upstreamAgent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(text) } },
      (reply) => {
        const parts: Array<Buffer> = []
        reply.on("data", (chunk: Buffer) => parts.push(chunk))
        reply.on("end", () => done(reply.statusCode ?? 502, Buffer.concat(parts).toString("utf8")))
      }
    )
    call.on("error", () => done(502, '{"error":{"code":"upstream_unreachable"}}'))
    call.end(text)
  }
  const screenedCall = (text: string, body: unknown, response: ServerResponse) => {
    const messages = field(body, "messages")
    const users = Array.isArray(messages) ? messages.filter((message) => field(message, "role") === "user") : []
    let input: Decided | undefined | null = null
    let upstreamAnswer: { status: number; body: string } | undefined
    const both = () => {
      if (input === null || upstreamAnswer === undefined) return
      if (input === undefined || upstreamAnswer.status !== 200) return answer(response, 502, upstreamAnswer.body)
      const json = JSON.parse(upstreamAnswer.body) as Record<string, unknown>
      const choices = field(json, "choices")
      const reply = String(field(field(Array.isArray(choices) ? choices[0] : undefined, "message"), "content") ?? "")
      const decidedInput = input
      screen(reply, (output) => {
        if (output === undefined) return answer(response, 500, '{"error":{"code":"not_recorded"}}')
        json["guardrail"] = { output: [{ effect: output.effect, trace_id: output.traceId, receipt_id: output.receiptId }] }
        const out = JSON.stringify(json)
        response.writeHead(200, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(out),
          "x-guardrail-effect": decidedInput.effect,
          "x-guardrail-trace-id": decidedInput.traceId,
          "x-guardrail-receipt-id": decidedInput.receiptId
        })
        response.end(out)
      })
    }
    screen(String(field(users.at(-1), "content") ?? ""), (decided) => ((input = decided), both()))
    forward(text, (status, reply) => ((upstreamAnswer = { status, body: reply }), both()))
  }

  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      if (mode === "echo") return answer(response, 200, text.length > 0 ? text : "{}")
      const body: unknown = JSON.parse(text)
      if (mode === "gateway-screened") return screenedCall(text, body, response)
      const run = /^\/v1\/runs\/([^/]+)\/events$/.exec(request.url ?? "")
      if (run !== null) {
        const runId = run[1]!
        const eventId = id("rev")
        const event = { runId, kind: String(field(body, "kind") ?? "step"), metadata: JSON.stringify(field(body, "metadata") ?? null), eventId }
        return storeRunEvents(event, (ok) => answer(response, ok ? 201 : 500, JSON.stringify({ id: eventId, run_id: runId })))
      }
      const decided = decide(body, request.headers["authorization"])
      if (decided === undefined) return answer(response, 401, '{"error":{"code":"invalid_api_key"}}')
      const done = (ok: boolean) => answer(response, ok ? 200 : 500, decided.response)
      if (mode === "decide") return done(true)
      if (mode === "decide-kafka") return produce!(decided, done)
      storeDecisions({ ...decided, payload: JSON.stringify({ request: body, response: decided.response }) }, done)
    })
  })
  server.listen(port, "127.0.0.1", () => console.log("ready"))
}

void main()
