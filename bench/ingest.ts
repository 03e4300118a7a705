/**
 * Ingest benchmark, printed as JSON and saved to bench/results/ingest.json:
 * sustained mixed POSTs (decisions through `POST /v1/events` and run events
 * through `POST /v1/runs/{id}/events`) against the all-in-one service on
 * Kafka + PostgreSQL, spawned as a child process. Reports
 *  - accepted events/s (2xx answers),
 *  - freshness p50/p99: from a probe event's acknowledgement to the moment
 *    `POST /v1/analytics/query` counts it (probes carry a unique agent id and
 *    are polled every 10 ms while the load runs),
 *  - loss and duplicates: after the load, each workspace's trace_count and
 *    run_event_count against the events the service accepted.
 * Events are sent with a workspace runtime key (as agents send them); the
 * analytics queries with a user session.
 * Usage: npx tsx bench/ingest.ts [seconds=20] [connections=64]
 * Needs PostgreSQL (BENCH_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test)
 * and Kafka (BENCH_KAFKA_BROKERS, default 127.0.0.1:9092).
 */
import { createHash } from "node:crypto"
import { Agent, request as httpRequest } from "node:http"
import { mkdirSync, writeFileSync } from "node:fs"
import { admin, adminUrl, startService } from "./support.js"

const seconds = Number(process.argv[2] ?? 20)
const connections = Number(process.argv[3] ?? 64)
const TENANTS = 4
const RUNS_PER_TENANT = 25
const PROBE_EVERY_MS = 100

const percentile = (values: Array<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? null : sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!
}

interface Tenant {
  /** A user session: analytics queries. */
  readonly auth: Record<string, string>
  /** A workspace runtime key, as agents send events. */
  readonly agentAuth: Record<string, string>
  readonly workspaceId: string
  readonly environmentId: string
  readonly runs: Array<string>
  decisions: number
  runEvents: number
}

const main = async () => {
  const database = `bench_ingest_${Date.now()}`
  await admin(`create database ${database}`)
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  const port = 40_000 + Math.floor(Math.random() * 10_000)
  const stop = await startService(url.toString(), port)
  const base = `http://127.0.0.1:${port}`
  const post = (path: string, auth: Record<string, string>, body: unknown) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
  const postJson = async (path: string, auth: Record<string, string>, body: unknown) =>
    (await (await post(path, auth, body)).json()) as Record<string, unknown>
  // The load itself goes through node:http with keep-alive (a fraction of fetch's CPU per request), so the
  // generator, which shares the two cores with the service, is not what the figure measures.
  const loadAgent = new Agent({ keepAlive: true, maxSockets: connections + 1 })
  const send = (path: string, auth: Record<string, string>, body: unknown) =>
    new Promise<number>((resolve, reject) => {
      const payload = JSON.stringify(body)
      const outgoing = httpRequest(`${base}${path}`, {
        method: "POST",
        agent: loadAgent,
        headers: { ...auth, "content-type": "application/json", "content-length": Buffer.byteLength(payload) }
      })
      outgoing.on("response", (incoming) => {
        incoming.resume()
        incoming.on("end", () => resolve(incoming.statusCode ?? 0))
      })
      outgoing.on("error", reject)
      outgoing.end(payload)
    })
  const getJson = async (path: string, auth: Record<string, string>) =>
    (await (await fetch(`${base}${path}`, { headers: auth })).json()) as Record<string, unknown>
  try {
    const tenants: Array<Tenant> = []
    for (let i = 0; i < TENANTS; i++) {
      const session = await postJson("/v1/auth/signup", {}, {
        username: `bench-${Date.now()}-${i}`,
        password: createHash("sha256").update("bench").digest("hex")
      })
      const auth = { authorization: `Bearer ${String(session["jwt"])}` }
      const environments = (await getJson("/v1/environments", auth))["environments"] as Array<{ id: string }>
      const workspaces = (await getJson("/v1/team/my-workspaces", { ...auth, "x-service-user-id": String(session["user_id"]) }))[
        "workspaces"
      ] as Array<{ id: string }>
      const runs: Array<string> = []
      for (let r = 0; r < RUNS_PER_TENANT; r++) {
        runs.push(String((await postJson("/v1/runs", auth, { agent_id: "bench-bot", kind: "chat_session" }))["id"]))
      }
      const key = await postJson("/v1/api-keys", auth, { name: "ingest-bench" })
      const agentAuth = { authorization: `Bearer ${String(key["plaintext_key"])}` }
      tenants.push({ auth, agentAuth, workspaceId: workspaces[0]!.id, environmentId: environments[0]!.id, runs, decisions: 0, runEvents: 0 })
    }
    const decisionBody = (tenant: Tenant, agentId: string, n: number) => ({
      kind: "output.proposed",
      principal: { agent_id: agentId, environment_id: tenant.environmentId, workspace_id: tenant.workspaceId },
      action: { operation: "reply", content: `Your order ${n} ships tomorrow and arrives by Friday.` }
    })
    const total = async (tenant: Tenant, metric: string, filters: Array<unknown> = []) => {
      const response = await post("/v1/analytics/query", tenant.auth, { metric, filters })
      return Number(((await response.json()) as { total: number }).total)
    }

    let running = true
    let failures = 0
    let sent = 0
    const load = async (worker: number) => {
      for (let n = worker; running; n += connections) {
        const tenant = tenants[n % TENANTS]!
        sent++
        const decision = n % 2 === 0
        const status = decision
          ? await send("/v1/events", tenant.agentAuth, decisionBody(tenant, "bench-bot", n))
          : await send(`/v1/runs/${tenant.runs[n % RUNS_PER_TENANT]}/events`, tenant.agentAuth, { kind: "user_turn" })
        if (status >= 200 && status < 300) {
          if (decision) tenant.decisions++
          else tenant.runEvents++
        } else failures++
      }
    }
    const freshness: Array<number> = []
    let probesLost = 0
    const probe = async () => {
      for (let n = 0; running; n++) {
        const tenant = tenants[n % TENANTS]!
        const agentId = `probe-${n}`
        const status = await send("/v1/events", tenant.agentAuth, decisionBody(tenant, agentId, n))
        const acked = performance.now()
        if (status < 200 || status >= 300) continue
        tenant.decisions++
        const filters = [{ dimension: "agent_id", values: [agentId] }]
        let seen = false
        while (performance.now() - acked < 30_000) {
          if ((await total(tenant, "trace_count", filters)) >= 1) {
            freshness.push(performance.now() - acked)
            seen = true
            break
          }
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
        if (!seen) probesLost++
        await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS))
      }
    }

    // Warm-up, then the measured run.
    const warm = Array.from({ length: 8 }, (_, i) => load(i))
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    running = false
    await Promise.all(warm)
    const before = tenants.map((tenant) => ({ decisions: tenant.decisions, runEvents: tenant.runEvents }))
    running = true
    const started = performance.now()
    const workers = [...Array.from({ length: connections }, (_, i) => load(i)), probe()]
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
    running = false
    await Promise.all(workers)
    const elapsed = (performance.now() - started) / 1000
    const accepted = tenants.reduce(
      (sum, tenant, i) => sum + tenant.decisions - before[i]!.decisions + tenant.runEvents - before[i]!.runEvents,
      0
    )

    // Settle: every accepted event counted once.
    const counted = async () =>
      Promise.all(tenants.map(async (tenant) => ({ traces: await total(tenant, "trace_count"), runEvents: await total(tenant, "run_event_count") })))
    const deadline = Date.now() + 120_000
    let final = await counted()
    while (
      Date.now() < deadline &&
      final.some((count, i) => count.traces < tenants[i]!.decisions || count.runEvents < tenants[i]!.runEvents)
    ) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      final = await counted()
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    final = await counted()
    let lost = 0
    let duplicated = 0
    final.forEach((count, i) => {
      const tenant = tenants[i]!
      for (const [got, want] of [
        [count.traces, tenant.decisions],
        [count.runEvents, tenant.runEvents]
      ] as const) {
        if (got < want) lost += want - got
        if (got > want) duplicated += got - want
      }
    })
    const result = {
      seconds: Math.round(elapsed * 10) / 10,
      connections,
      tenants: TENANTS,
      requests_sent: sent,
      accepted_events: accepted,
      accepted_events_per_s: Math.round(accepted / elapsed),
      non_2xx: failures,
      freshness_samples: freshness.length,
      freshness_p50_ms: percentile(freshness, 0.5) === null ? null : Math.round(percentile(freshness, 0.5)!),
      freshness_p99_ms: percentile(freshness, 0.99) === null ? null : Math.round(percentile(freshness, 0.99)!),
      freshness_max_ms: freshness.length === 0 ? null : Math.round(Math.max(...freshness)),
      probes_not_seen_in_30s: probesLost,
      lost,
      duplicated,
      goal_met:
        accepted / elapsed >= 5_000 && (percentile(freshness, 0.99) ?? Infinity) <= 1_000 && lost === 0 && duplicated === 0
    }
    console.log(JSON.stringify({ bench: "ingest", ...result }))
    mkdirSync(new URL("results/", import.meta.url), { recursive: true })
    writeFileSync(new URL("results/ingest.json", import.meta.url), `${JSON.stringify({ at: new Date().toISOString(), ...result }, null, 2)}\n`)
  } finally {
    stop()
    await new Promise((resolve) => setTimeout(resolve, 2000))
    await admin(`drop database if exists ${database} with (force)`)
  }
  process.exit(0)
}

void main()
