/**
 * CPU time per gateway call, by thread of the all-in-one service (its main
 * thread, the stream worker's thread, libuv's and V8's helpers) and by
 * process on the machine (PostgreSQL, Kafka, the stub), read from /proc
 * around an autocannon run after a warm-up, plus a pause so the consumers'
 * share is counted. The route is screened as in bench/gateway.ts (two packs
 * and 50 policies, request and reply each decided) or plain (no guardrails,
 * no budget). This says where a screened call's CPU goes, which the
 * latency figures cannot.
 * Usage: npx tsx bench/gateway-cpu.ts [screened|plain] [seconds=10] [connections=50] [checkout=.]
 * (`checkout`: another checkout's service, to compare two commits the same way).
 * Saves bench/results/gateway-cpu-<target>.json. Linux only (/proc).
 */
import { resolve } from "node:path"
import { everyProcess, everyThread, perUnit } from "./cpu.js"
import { body, children, configureService, startGatewayService, startStub } from "./gateway-setup.js"
import { benchDatabase, cannon, endRun, printAndSave, waitUntilIdle } from "./support.js"

const target = process.argv[2] === "plain" ? "plain" : "screened"
const seconds = Number(process.argv[3] ?? 10)
const connections = Number(process.argv[4] ?? 50)
const checkout = resolve(process.argv[5] ?? ".")

const main = async () => {
  const database = await benchDatabase("bench_gateway_cpu")
  try {
    await startStub()
    const { service, serviceBase } = await startGatewayService(database.url, checkout)
    const pid = service.child.pid!
    const route = await configureService(serviceBase, false, target === "screened")
    const request = { url: route.url, method: "POST" as const, body, headers: route.headers }
    await cannon({ ...request, connections: 10, duration: 3 }) // warm-up
    await waitUntilIdle([pid])
    const processesBefore = everyProcess()
    const threadsBefore = everyThread(pid)
    const run = await cannon({ ...request, connections, duration: seconds })
    await waitUntilIdle([pid]) // the consumers finish what the run produced
    const calls = run.requests.total
    const result = {
      target,
      checkout,
      seconds,
      connections,
      calls_per_s: Math.round(run.requests.average),
      p50_ms: run.latency.p50,
      p99_ms: run.latency.p99,
      non_2xx: run.non2xx,
      service_threads_cpu_us_per_call: perUnit(threadsBefore, everyThread(pid), calls),
      all_processes_cpu_us_per_call: perUnit(processesBefore, everyProcess(), calls)
    }
    printAndSave("gateway-cpu", `gateway-cpu-${target}.json`, result)
  } finally {
    await endRun(children, 2000, [database])
  }
  process.exit(0)
}

void main()
