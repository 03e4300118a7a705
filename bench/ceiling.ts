/**
 * What this machine allows, measured the way bench/authorize.ts and
 * bench/ingest.ts measure the service: autocannon against
 * bench/ceiling-server.ts, a plain node:http server doing only what any
 * implementation must do per request (no framework). Its figures are upper
 * bounds for the service's goals:
 *  - authorize goal: decisions/s >= 0.35 x the bare echo's requests/s and
 *    p99 <= 10 ms at 50 connections (issue 5);
 *  - ingest goal: >= 5,000 mixed decisions and run events accepted per second
 *    with freshness p99 <= 1 s (issue 6): `ingest-mix-pg` before anything is
 *    relayed or aggregated, `ingest-pipeline` with bench/ceiling-pipeline.ts
 *    relaying the outbox to Kafka and aggregating every event meanwhile.
 * Usage: npx tsx bench/ceiling.ts [seconds=10] [pipeline]
 *   (saves bench/results/ceiling.json; with `pipeline`, runs only that mode and prints it)
 * Needs PostgreSQL (BENCH_POSTGRES_URL) and Kafka (BENCH_KAFKA_BROKERS), as the other benchmarks.
 */
import { spawn } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import pg from "pg"
import { SERVICE_NODE_FLAGS, admin, adminUrl, brokers, cannon, pause, startCeilingServer } from "./support.js"

const seconds = Number(process.argv[2] ?? 10)
const onlyPipeline = process.argv[3] === "pipeline"

const decision = JSON.stringify({
  kind: "output.proposed",
  principal: { agent_id: "support-bot", environment_id: "env_ceiling", workspace_id: "ws_ceiling" },
  action: { operation: "reply", content: "Thanks for waiting: your order ships tomorrow and arrives by Friday." }
})
const runEvent = JSON.stringify({ kind: "tool_call", label: "lookup_order", metadata: { order: "A-1001" } })
const headers = { authorization: "Bearer gr_live_ceiling", "content-type": "application/json" }

const measure = async (url: string, body: string, connections: number) => {
  await cannon({ url, method: "POST", body, headers, connections: 10, duration: 2 }) // warm-up
  const result = await cannon({ url, method: "POST", body, headers, connections, duration: seconds })
  return {
    requests_per_s: Math.round(result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
    errors: result.errors
  }
}

/** The ingest mix: decisions and run events (over 100 runs) at once, 32 connections each. */
const measureMix = async (base: string) => {
  const [decisions, events] = await Promise.all([
    measure(`${base}/v1/events`, decision, 32),
    Promise.all(Array.from({ length: 4 }, (_, i) => measure(`${base}/v1/runs/run_${i * 25}/events`, runEvent, 8)))
  ])
  return {
    accepted_per_s: decisions.requests_per_s + events.reduce((sum, part) => sum + part.requests_per_s, 0),
    decisions,
    run_events_per_s: events.reduce((sum, part) => sum + part.requests_per_s, 0)
  }
}

const query = async <Row>(databaseUrl: string, text: string) => {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  return (await client.query(text).finally(() => client.end())).rows as Array<Row>
}

interface PipelineStats {
  readonly aggregated: number
  readonly freshness_p50_ms: number | null
  readonly freshness_p99_ms: number | null
  readonly freshness_max_ms: number | null
}

/**
 * The ingest mix against the `pipeline` server while bench/ceiling-pipeline.ts
 * relays and aggregates every event; then how long the aggregates took to
 * catch up after the load and the freshness (acknowledgement to aggregate
 * commit) of all events.
 */
const measurePipeline = async (databaseUrl: string) => {
  const worker = spawn("node", [...SERVICE_NODE_FLAGS, "--import", "tsx", "bench/ceiling-pipeline.ts"], {
    env: { ...process.env, DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers, CEILING_TOPIC_PREFIX: `ceiling-${Date.now()}-` },
    stdio: ["ignore", "pipe", "inherit"]
  })
  let latest: PipelineStats = { aggregated: 0, freshness_p50_ms: null, freshness_p99_ms: null, freshness_max_ms: null }
  const ready = new Promise<void>((resolve) =>
    worker.stdout.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n")) {
        if (line === "ready") resolve()
        else if (line.startsWith("{")) latest = JSON.parse(line) as PipelineStats
      }
    })
  )
  const server = await startCeilingServer("pipeline", databaseUrl)
  try {
    await ready
    const mix = await measureMix(server.base)
    const loadEnded = performance.now()
    await pause(500) // answers still in flight when autocannon stopped
    const [row] = await query<{ stored: string }>(
      databaseUrl,
      "select ((select count(*) from c_traces) + (select count(*) from c_run_events))::text as stored"
    )
    const stored = Number(row!.stored)
    while (latest.aggregated < stored && performance.now() - loadEnded < 120_000) await pause(200)
    return { ...mix, caught_up_after_load_s: Math.round((performance.now() - loadEnded) / 100) / 10, events_stored: stored, ...latest }
  } finally {
    await server.stop()
    worker.kill("SIGTERM")
  }
}

const main = async () => {
  const database = `bench_ceiling_${Date.now()}`
  await admin(`create database ${database}`)
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  const results: Record<string, unknown> = {}
  try {
    for (const mode of onlyPipeline ? [] : ["echo", "decide", "decide-kafka", "pg"]) {
      const server = await startCeilingServer(mode, url.toString())
      try {
        results[mode === "pg" ? "decide-pg" : mode] = await measure(`${server.base}/v1/events`, decision, 50)
        if (mode === "pg") {
          results["run-event-pg"] = await measure(`${server.base}/v1/runs/run_7/events`, runEvent, 50)
          await pause(1000)
          results["ingest-mix-pg"] = await measureMix(server.base)
        }
      } finally {
        await server.stop()
      }
      console.log(JSON.stringify({ bench: "ceiling", mode, ...results }))
    }
    results["ingest-pipeline"] = await measurePipeline(url.toString())
    console.log(JSON.stringify({ bench: "ceiling", mode: "pipeline", ...results }))
  } finally {
    await admin(`drop database if exists ${database} with (force)`)
  }
  if (onlyPipeline) process.exit(0) // a partial run is printed, not saved
  const echo = (results["echo"] as { requests_per_s: number }).requests_per_s
  const ratios = Object.fromEntries(
    ["decide", "decide-kafka", "decide-pg"].map((mode) => [
      mode,
      Math.round(((results[mode] as { requests_per_s: number }).requests_per_s / echo) * 1000) / 1000
    ])
  )
  const summary = { seconds, ...results, ratio_to_echo: ratios }
  console.log(JSON.stringify({ bench: "ceiling-summary", ...summary }))
  mkdirSync(new URL("results/", import.meta.url), { recursive: true })
  writeFileSync(
    new URL("results/ceiling.json", import.meta.url),
    `${JSON.stringify({ at: new Date().toISOString(), ...summary }, null, 2)}\n`
  )
  process.exit(0)
}

void main()
