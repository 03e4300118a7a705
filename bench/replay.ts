/**
 * Impact replay benchmark (issue 19): 100,000 retained decisions replayed
 * against 200 policies by the stream worker of the all-in-one service, twice.
 * Prints, per run, decisions/s (replayed decisions over the job's own
 * started_at..finished_at), time to result (POST /v1/policies/impact until
 * GET shows it completed, polled every 25 ms) and the result_digest; the goal
 * is at least 20,000 decisions/s, with the same digest both times. Output is
 * JSON lines, also saved to bench/results/issue19/replay-<date>T<hhmmss>.txt.
 *
 * The decisions are seeded in SQL from one real trace of the service (its
 * payload with the content varied): every fifth of them names a denying
 * policy's phrase, two fifths a deferring one, half no policy; 1 in 1,000 is
 * reviewed false_positive and 1 in 1,000 missed_issue. The candidate denies
 * what phrase-1 deferred and disables phrase-3.
 * Usage: npx tsx bench/replay.ts [decisions=100000] [port=42210]
 * Needs PostgreSQL (BENCH_POSTGRES_URL) and Kafka (BENCH_KAFKA_BROKERS).
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import pg from "pg"
import { cpuOf } from "./cpu.js"
import { admin, adminUrl, benchTenant, json, pause, phrasePolicy, startService } from "./support.js"

const DECISIONS = Number(process.argv[2] ?? 100_000)
const PORT = Number(process.argv[3] ?? 42_210)
const POLICIES = 200
const GOAL_PER_S = 20_000

const lines: Array<string> = []
const print = (value: Record<string, unknown>) => {
  const line = JSON.stringify(value)
  lines.push(line)
  console.log(line)
}

/** `DECISIONS` traces cloned from `templateId`, oldest first, 10 ms apart, ending a minute ago. */
const seed = async (databaseUrl: string, templateId: string) => {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const started = performance.now()
    await client.query(
      `insert into traces (id, workspace_id, agent_id, environment_id, environment, intent_id, receipt_id, decision,
                           domain, elapsed_ms, payload, latest_review_outcome, created_at)
       select 'trc_bench_' || lpad(g::text, 7, '0'), t.workspace_id, 'agent-' || (g % 20), t.environment_id,
              t.environment, t.intent_id, t.receipt_id,
              case when g % 400 >= 200 then 'permit' when (g % 400) % 3 = 0 then 'deny' else 'defer' end,
              t.domain, 1,
              jsonb_set(t.payload, '{request,action,content}',
                        to_jsonb('Thanks for waiting: your order ships tomorrow, forbidden phrase ' ||
                                 lpad((g % 400)::text, 3, '0') || ', and arrives by Friday.')),
              case g % 1000 when 3 then 'false_positive' when 7 then 'missed_issue' end,
              now() - interval '1 minute' - ($2::int - g) * interval '10 milliseconds'
         from generate_series(1, $2::int) g, (select * from traces where id = $1) t`,
      [templateId, DECISIONS]
    )
    await client.query("analyze traces")
    return Math.round(performance.now() - started)
  } finally {
    await client.end()
  }
}

const replayOnce = async (base: string, headers: Record<string, string>, body: unknown, pid: number) => {
  const cpuBefore = cpuOf(pid)
  const started = performance.now()
  const job = await json(`${base}/v1/policies/impact`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  if (typeof job["id"] !== "string") throw new Error(`impact not started: ${JSON.stringify(job)}`)
  for (;;) {
    const current = await json(`${base}/v1/policies/impact/${job["id"]}`, { headers })
    if (current["status"] === "completed" || current["status"] === "failed") {
      const timeToResult = Math.round(performance.now() - started)
      const cpuMs = cpuOf(pid) - cpuBefore
      if (current["status"] === "failed") throw new Error(`impact failed: ${String(current["error"])}`)
      const result = current["result"] as {
        decisions_replayed: number
        changed: number
        transitions: Array<{ from: string; to: string; count: number }>
      }
      const seconds = (Date.parse(String(current["finished_at"])) - Date.parse(String(current["started_at"]))) / 1000
      return {
        job_id: current["id"],
        decisions_replayed: result.decisions_replayed,
        changed: result.changed,
        replay_seconds: seconds,
        decisions_per_s: Math.round(result.decisions_replayed / seconds),
        time_to_result_ms: timeToResult,
        // The machine is shared: decisions per CPU-second of the service process is the figure contention blurs least.
        service_cpu_ms: cpuMs,
        decisions_per_cpu_s: Math.round(result.decisions_replayed / (cpuMs / 1000)),
        load_average_1m: Math.round(loadavg()[0]! * 10) / 10,
        result_digest: current["result_digest"] as string,
        transitions: result.transitions.map(({ count, from, to }) => `${from}->${to}: ${count}`)
      }
    }
    await pause(25)
  }
}

const main = async () => {
  const database = `bench_replay_${Date.now()}`
  await admin(`create database ${database}`)
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  const stop = await startService(url.toString(), PORT)
  try {
    const base = `http://127.0.0.1:${PORT}`
    const tenant = await benchTenant(base, POLICIES)
    const decided = await json(`${base}/v1/events`, {
      method: "POST",
      headers: tenant.keyHeaders,
      body: JSON.stringify({
        kind: "output.proposed",
        principal: { agent_id: "agent-0", environment_id: tenant.environmentId, workspace_id: tenant.workspaceId },
        action: { operation: "reply", content: "Thanks for waiting: your order ships tomorrow." }
      })
    })
    const seedMs = await seed(url.toString(), String(decided["trace_id"]))
    print({ bench: "replay-seed", decisions: DECISIONS, enabled_policies: POLICIES, seed_ms: seedMs, cores: cpus().length })
    const body = {
      candidate_policies: [phrasePolicy(1, "deny")],
      disable_ids: ["phrase-3"],
      start: new Date(Date.now() - 3 * 3_600_000).toISOString(),
      end: new Date(Date.now() + 60_000).toISOString()
    }
    const runs = []
    for (const run of [1, 2]) {
      const { transitions, ...figures } = await replayOnce(base, tenant.userHeaders, body, stop.pid)
      runs.push(figures)
      print({ bench: "replay", run, enabled_policies: POLICIES, ...figures, ...(run === 1 ? { transitions } : {}) })
    }
    const [first, second] = runs as [(typeof runs)[0], (typeof runs)[0]]
    print({
      bench: "replay-summary",
      decisions: first.decisions_replayed,
      enabled_policies: POLICIES,
      decisions_per_s: [first.decisions_per_s, second.decisions_per_s],
      time_to_result_ms: [first.time_to_result_ms, second.time_to_result_ms],
      decisions_per_cpu_s: [first.decisions_per_cpu_s, second.decisions_per_cpu_s],
      load_average_1m: [first.load_average_1m, second.load_average_1m],
      result_digests: [first.result_digest, second.result_digest],
      same_digest: first.result_digest === second.result_digest,
      goal_decisions_per_s: GOAL_PER_S,
      goal_met: Math.min(first.decisions_per_s, second.decisions_per_s) >= GOAL_PER_S
    })
  } finally {
    stop()
    await pause(2_000)
    await admin(`drop database if exists ${database} with (force)`)
  }
  const directory = new URL("results/issue19/", import.meta.url)
  mkdirSync(directory, { recursive: true })
  const stamp = new Date().toISOString().slice(0, 19).replaceAll(":", "")
  const file = new URL(`replay-${stamp}.txt`, directory)
  writeFileSync(file, `$ npx tsx bench/replay.ts ${process.argv.slice(2).join(" ")}\n${lines.join("\n")}\n`)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
