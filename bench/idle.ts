/**
 * What an idle service costs: resident memory and CPU of `npm start`'s
 * process while nothing calls it. Modes: `embedded` (no DATABASE_URL, no
 * KAFKA_BROKERS: PGlite and its database log), `postgres` (DATABASE_URL,
 * database event log) and `kafka` (DATABASE_URL and KAFKA_BROKERS).
 *
 *   npx tsx bench/idle.ts [mode] [seconds]
 *
 * After /readyz answers and `WARM_SECONDS` (20) pass, RSS and CPU are read
 * from /proc once a second for `seconds` (60). Saves bench/results/idle-<mode>.json.
 */
import { spawn } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import { cpuOf } from "./cpu.js"
import { benchDatabase, brokers, pause, printAndSave, SERVICE_NODE_FLAGS } from "./support.js"

const modes = ["embedded", "postgres", "kafka"] as const
type Mode = (typeof modes)[number]
const mode = (process.argv[2] ?? "postgres") as Mode
if (!modes.includes(mode)) throw new Error(`mode is one of ${modes.join(", ")}`)
const seconds = Number(process.argv[3] ?? 60)
const WARM_SECONDS = 20
const port = 18_471
const dataDir = `/tmp/guardrail-bench-idle-${port}`

const residentMiB = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("VmRSS:"))
  return Math.round(Number(line?.replace(/\D+/g, "") ?? 0) / 1024)
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

const database = mode === "embedded" ? undefined : await benchDatabase("bench_idle")
rmSync(dataDir, { recursive: true, force: true })
const env: Record<string, string | undefined> = {
  ...process.env,
  PORT: String(port),
  HOST: "127.0.0.1",
  DATA_DIR: dataDir
}
delete env["DATABASE_URL"]
delete env["KAFKA_BROKERS"]
if (database !== undefined) env["DATABASE_URL"] = database.url.href
if (mode === "kafka") Object.assign(env, { KAFKA_BROKERS: brokers, KAFKA_TOPIC_PREFIX: `benchidle${Date.now()}.` })

const child = spawn("node", [...SERVICE_NODE_FLAGS, "--import", "tsx", "services/all-in-one/main.ts"], {
  env,
  stdio: "ignore"
})
const pid = child.pid ?? 0
try {
  const started = Date.now()
  while (
    !(await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.ok,
      () => false
    ))
  ) {
    if (Date.now() - started > 120_000) throw new Error("the service did not become ready in 120 s")
    await pause(500)
  }
  const readyAfterMs = Date.now() - started
  await pause(WARM_SECONDS * 1000)
  const rss: Array<number> = []
  const cpuBefore = cpuOf(pid)
  for (let second = 0; second < seconds; second++) {
    rss.push(residentMiB(pid))
    await pause(1000)
  }
  const cpuPercent = Math.round(((cpuOf(pid) - cpuBefore) / (seconds * 1000)) * 1000) / 10
  printAndSave("idle", `idle-${mode}.json`, {
    mode,
    seconds,
    ready_after_ms: readyAfterMs,
    rss_mib_median: median(rss),
    rss_mib_max: Math.max(...rss),
    cpu_percent_of_a_core: cpuPercent
  })
} finally {
  child.kill("SIGTERM")
  await new Promise((resolve) => child.once("exit", resolve))
  await database?.drop()
  rmSync(dataDir, { recursive: true, force: true })
}
