/**
 * What this machine allows, measured the way bench/authorize.ts and
 * bench/ingest.ts measure the service: autocannon against
 * bench/ceiling-server.ts, a plain node:http server doing only what any
 * implementation must do per request (no framework, no relay, no
 * consumers). Its figures are upper bounds for the service's goals:
 *  - authorize goal: decisions/s >= 0.35 x the bare echo's requests/s and
 *    p99 <= 10 ms at 50 connections (issue 5);
 *  - ingest goal: >= 5,000 mixed decisions and run events accepted per second
 *    (issue 6), before freshness.
 * Usage: npx tsx bench/ceiling.ts [seconds=10]   (saves bench/results/ceiling.json)
 * Needs PostgreSQL (BENCH_POSTGRES_URL) and Kafka (BENCH_KAFKA_BROKERS), as the other benchmarks.
 */
import { spawn } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { admin, adminUrl, brokers, cannon, pause } from "./support.js"

const seconds = Number(process.argv[2] ?? 10)

const decision = JSON.stringify({
  kind: "output.proposed",
  principal: { agent_id: "support-bot", environment_id: "env_ceiling", workspace_id: "ws_ceiling" },
  action: { operation: "reply", content: "Thanks for waiting: your order ships tomorrow and arrives by Friday." }
})
const runEvent = JSON.stringify({ kind: "tool_call", label: "lookup_order", metadata: { order: "A-1001" } })
const headers = { authorization: "Bearer gr_live_ceiling", "content-type": "application/json" }

/** Starts the ceiling server in `mode` on its own port; answers its base URL and a stop function. */
const startServer = (mode: string, databaseUrl: string) =>
  new Promise<{ base: string; stop: () => Promise<void> }>((resolve, reject) => {
    const port = 40_000 + Math.floor(Math.random() * 10_000)
    const child = spawn("node", ["--import", "tsx", "bench/ceiling-server.ts", mode], {
      env: { ...process.env, PORT: String(port), DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers },
      stdio: ["ignore", "pipe", "inherit"]
    })
    const timer = setTimeout(() => reject(new Error(`ceiling server ${mode} did not start`)), 60_000)
    child.stdout.on("data", (chunk: Buffer) => {
      if (!chunk.toString().includes("ready")) return
      clearTimeout(timer)
      resolve({
        base: `http://127.0.0.1:${port}`,
        stop: () => new Promise((done) => (child.kill("SIGTERM"), child.once("exit", () => done())))
      })
    })
  })

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

const main = async () => {
  const database = `bench_ceiling_${Date.now()}`
  await admin(`create database ${database}`)
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  const results: Record<string, unknown> = {}
  try {
    for (const mode of ["echo", "decide", "decide-kafka", "pg"]) {
      const server = await startServer(mode, url.toString())
      try {
        results[mode === "pg" ? "decide-pg" : mode] = await measure(`${server.base}/v1/events`, decision, 50)
        if (mode === "pg") {
          results["run-event-pg"] = await measure(`${server.base}/v1/runs/run_7/events`, runEvent, 50)
          // The ingest mix: decisions and run events (over 100 runs) at once, 32 connections each.
          await pause(1000)
          const [decisions, events] = await Promise.all([
            measure(`${server.base}/v1/events`, decision, 32),
            Promise.all(
              Array.from({ length: 4 }, (_, i) => measure(`${server.base}/v1/runs/run_${i * 25}/events`, runEvent, 8))
            )
          ])
          results["ingest-mix-pg"] = {
            accepted_per_s: decisions.requests_per_s + events.reduce((sum, part) => sum + part.requests_per_s, 0),
            decisions,
            run_events_per_s: events.reduce((sum, part) => sum + part.requests_per_s, 0)
          }
        }
      } finally {
        await server.stop()
      }
      console.log(JSON.stringify({ bench: "ceiling", mode, ...results }))
    }
  } finally {
    await admin(`drop database if exists ${database} with (force)`)
  }
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
