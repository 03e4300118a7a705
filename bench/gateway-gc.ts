/**
 * Garbage-collector pauses of the all-in-one service under the screened
 * gateway load of bench/gateway.ts (two packs and 50 policies, request and
 * reply each decided) at a fixed 500 requests/s, open loop, for each young
 * generation size (`--max-semi-space-size`, MiB) given. Each size gets a
 * fresh service (with `--trace-gc`), sizes alternate over `rounds`, and per
 * run the figures are: scavenges and mark-compacts per thread (the API's
 * main thread, the stream worker's), their summed and longest pauses, the
 * service's peak resident memory, and the run's latency p50 / p99.
 * GC time is counted by V8 itself, so it compares sizes even on a machine
 * whose speed drifts between runs, which the latencies alone cannot.
 * Usage: npx tsx bench/gateway-gc.ts [seconds=12] [rounds=2] [sizes=16,32]
 * Saves bench/results/gateway-gc.json.
 */
import { readFileSync } from "node:fs"
import { Agent } from "node:http"
import { createInterface } from "node:readline"
import { openLoop, quantile } from "./gateway-measure.js"
import { body, children, configureService, startGatewayService, startStub } from "./gateway-setup.js"
import { benchDatabase, cannon, endRun, pause, printAndSave, SERVICE_NODE_FLAGS } from "./support.js"

const seconds = Number(process.argv[2] ?? 12)
const rounds = Number(process.argv[3] ?? 2)
const sizes = (process.argv[4] ?? "16,32").split(",").map(Number)

/** One `--trace-gc` line: the isolate (thread), the kind and the pause in ms. */
const GC_LINE = /^\[\d+:(0x[0-9a-f]+)\]\s+\d+ ms: (Scavenge|Mark-Compact)[^,]*, ([\d.]+) \/ [\d.]+ ms/

interface Pauses {
  count: number
  total_ms: number
  longest_ms: number
}

/** Pauses per isolate and kind, from the lines printed while the load ran. */
const pausesOf = (lines: ReadonlyArray<string>) => {
  const byIsolate = new Map<string, Record<string, Pauses>>()
  for (const line of lines) {
    const match = GC_LINE.exec(line)
    if (match === null) continue
    const [, isolate = "", kind = "", ms = "0"] = match
    const kinds = byIsolate.get(isolate) ?? {}
    const pauses = (kinds[kind] ??= { count: 0, total_ms: 0, longest_ms: 0 })
    pauses.count += 1
    pauses.total_ms = Math.round((pauses.total_ms + Number(ms)) * 10) / 10
    pauses.longest_ms = Math.max(pauses.longest_ms, Number(ms))
    byIsolate.set(isolate, kinds)
  }
  return byIsolate
}

const peakResidentMiB = (pid: number) => {
  const peak = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return peak === null ? null : Math.round(Number(peak[1]) / 1024)
}

const runOnce = async (semiSpaceMiB: number) => {
  const database = await benchDatabase("bench_gateway_gc")
  const started = children.length
  try {
    await startStub()
    // The service's own flags, with this run's young generation size instead of the default one.
    const flags = [
      ...SERVICE_NODE_FLAGS.filter((flag) => !flag.startsWith("--max-semi-space-size")),
      `--max-semi-space-size=${semiSpaceMiB}`,
      "--trace-gc"
    ]
    const { service, serviceBase } = await startGatewayService(database.url, process.cwd(), undefined, flags)
    let recording = false
    const lines: Array<string> = []
    // Whole lines: a chunk of stdout can end mid-line.
    if (service.child.stdout !== null) {
      createInterface({ input: service.child.stdout }).on("line", (line) => {
        if (recording) lines.push(line)
      })
    }
    const route = await configureService(serviceBase, false, true)
    await cannon({ url: route.url, method: "POST", body, headers: route.headers, connections: 20, duration: 3 })
    await pause(3000)
    const agent = new Agent({ keepAlive: true, maxSockets: 50 })
    recording = true
    const load = await openLoop({ name: "screened", ...route }, body, agent, 500, seconds)
    recording = false
    agent.destroy()
    const latencies = load.latencies.sort((a, b) => a - b)
    // One entry per isolate: the API's main thread and the stream worker's (V8 prints no thread names).
    const threads = [...pausesOf(lines).values()]
    return {
      semi_space_mib: semiSpaceMiB,
      p50_ms: quantile(latencies, 0.5),
      p99_ms: quantile(latencies, 0.99),
      failed: load.failed,
      peak_resident_mib: peakResidentMiB(service.child.pid!),
      gc_by_thread: threads
    }
  } finally {
    await endRun(children.splice(started), 2000, [database])
  }
}

const main = async () => {
  const runs: Array<Awaited<ReturnType<typeof runOnce>>> = []
  for (let round = 0; round < rounds; round++) {
    for (const size of round % 2 === 0 ? sizes : [...sizes].reverse()) {
      const run = await runOnce(size)
      console.log(JSON.stringify({ bench: "gateway-gc", seconds, ...run }))
      runs.push(run)
    }
  }
  // Per size, one figure per round: GC pause per second of load, summed over the service's threads.
  const summary = sizes.map((size) => {
    const own = runs.filter((run) => run.semi_space_mib === size)
    return {
      semi_space_mib: size,
      gc_pause_ms_per_s: own.map((run) =>
        Math.round(
          run.gc_by_thread.reduce(
            (sum, kinds) => sum + Object.values(kinds).reduce((total, pauses) => total + pauses.total_ms, 0),
            0
          ) / seconds
        )
      ),
      p99_ms: own.map((run) => run.p99_ms),
      peak_resident_mib: own.map((run) => run.peak_resident_mib)
    }
  })
  printAndSave("gateway-gc", "gateway-gc.json", { seconds, rounds, runs, summary })
  process.exit(0)
}

void main()
