/**
 * CPU time per `POST /v1/events` decision, by process: the service (as
 * all-in-one, or as separate api and stream-worker processes) and every
 * other process on the machine (PostgreSQL, Kafka, kernel threads), read
 * from /proc/<pid>/stat around a 50-connection autocannon run after a
 * warm-up, plus a settling pause so the consumers' share is counted. This is
 * the figure least disturbed by other work on the machine; it is how the
 * hot spots in docs/BENCHMARKS.md were found.
 * Usage: npx tsx bench/cpu-per-decision.ts [all|split|api] [seconds=8]
 * Saves bench/results/cpu-per-decision-<mode>.json. Linux only (/proc).
 */
import { spawn } from "node:child_process"
import { cpuOf, everyProcess, perUnit } from "./cpu.js"
import {
  benchDatabase,
  brokers,
  cannon,
  decisionTenant,
  endRun,
  pause,
  printAndSave,
  SERVICE_NODE_FLAGS
} from "./support.js"

const mode = process.argv[2] ?? "all"
const seconds = Number(process.argv[3] ?? 8)
const services = mode === "split" ? ["api", "stream-worker"] : mode === "api" ? ["api"] : ["all-in-one"]
const POLICIES = 200
const profile = process.env["BENCH_CPU_PROFILE"]
/** BENCH_CPU_PROFILE=<dir>: each service process writes a V8 CPU profile there. */
const profileArgs = profile === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profile}`]

const main = async () => {
  const database = await benchDatabase("bench_cpu")
  const port = 40_000 + Math.floor(Math.random() * 10_000)
  const children = services.map((service) =>
    spawn("node", [...SERVICE_NODE_FLAGS, ...profileArgs, "--import", "tsx", `services/${service}/main.ts`], {
      env: {
        ...process.env,
        DATABASE_URL: database.url.toString(),
        KAFKA_BROKERS: brokers,
        KAFKA_TOPIC_PREFIX: `benchcpu${Date.now()}.`,
        PORT: String(port),
        HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
        DATA_DIR: `/tmp/guardrail-bench-cpu-${port}`,
        DATABASE_POOL_SIZE: "20"
      },
      stdio: "ignore"
    })
  )
  try {
    const base = `http://127.0.0.1:${port}`
    for (let ready = false; !ready; await pause(300)) {
      ready = await fetch(`${base}/readyz`).then(
        (response) => response.ok,
        () => false
      )
    }
    const target = await decisionTenant(base, POLICIES)
    await cannon({ ...target, connections: 10, duration: 3 }) // warm-up
    await pause(2000)
    const before = everyProcess()
    const serviceBefore = children.map((child) => cpuOf(child.pid!))
    const run = await cannon({ ...target, connections: 50, duration: seconds })
    await pause(3000) // the consumers finish what the run produced
    const decisions = run.requests.total
    const result = {
      mode,
      seconds,
      decisions_per_s: Math.round(run.requests.average),
      p50_ms: run.latency.p50,
      p99_ms: run.latency.p99,
      non_2xx: run.non2xx,
      service_cpu_us_per_decision: Object.fromEntries(
        services.map((service, i) => [
          service,
          Math.round(((cpuOf(children[i]!.pid!) - serviceBefore[i]!) * 1000) / decisions)
        ])
      ),
      all_processes_cpu_us_per_decision: perUnit(before, everyProcess(), decisions)
    }
    printAndSave("cpu-per-decision", `cpu-per-decision-${mode}.json`, result)
  } finally {
    await endRun(children, 3000, [database])
  }
  process.exit(0)
}

void main()
