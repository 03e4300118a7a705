/**
 * Concurrency-1 added latency of two checkouts' gateways, measured paired:
 * both services run at once (each from its own checkout, same
 * node_modules, own database and topics) with a budgeted route to the same
 * stub, and each round sends one request to the stub directly, one through
 * each gateway, in a shuffled order. Each target's added p50 / p99 is its
 * percentile minus the direct one over the same rounds, so the machine's
 * drift from minute to minute and the stub timer's phase land on all three
 * alike. bench/gateway.ts measures its targets one after the other, minutes
 * apart, which at concurrency 1 moves a gateway's added p50 by more than a
 * millisecond between two runs of the same commit (issue 16's gate).
 *
 * With `rate500`, each round instead gives each target, in a shuffled
 * order, one second of 500 requests/s open loop over up to 50 connections
 * (bench/gateway.ts's `rate_500` load, timed per request rather than in
 * autocannon's whole milliseconds), so the p99 at that load is compared
 * over slices interleaved second by second rather than runs minutes apart.
 * With `screened`, each gateway's route is bench/gateway.ts's screened one
 * (two packs and 50 policies, request and reply decided, no budget) instead
 * of the budgeted plain one.
 * Usage: npx tsx bench/gateway-paired.ts <checkout A> <checkout B> [<checkout C> ...] [rounds=3000] [c1|rate500] [screened]
 * (the same checkout twice measures the method's own noise); ratios are over A.
 * Saves bench/results/gateway-paired[-rate500][-screened].json.
 */
import { Agent } from "node:http"
import { resolve } from "node:path"
import { openLoop, quantile, type Target, timedRequest } from "./gateway-measure.js"
import { body, children, configureService, ports, startGatewayService, startStub } from "./gateway-setup.js"
import { benchDatabase, cannon, endRun, pause, printAndSave } from "./support.js"

// Arguments in any order: checkouts (two or more), a number of rounds, a mode.
const args = process.argv.slice(2)
const modes = ["c1", "rate500"] as const
const screened = args.includes("screened")
const mode = modes.find((name) => args.includes(name)) ?? "c1"
const rounds = Number(args.find((arg) => /^\d+$/.test(arg)) ?? 3000)
const checkouts = args
  .filter((arg) => !/^\d+$/.test(arg) && arg !== "screened" && !modes.some((name) => name === arg))
  .map((dir) => resolve(dir))
if (checkouts.length < 2)
  throw new Error(
    "usage: npx tsx bench/gateway-paired.ts <checkout A> <checkout B> [<checkout C> ...] [rounds] [c1|rate500] [screened]"
  )

/** Fisher-Yates, so no target always goes first (the one after an idle gap). */
const shuffled = <A>(items: ReadonlyArray<A>) => {
  const copy = [...items]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[copy[i], copy[j]] = [copy[j]!, copy[i]!]
  }
  return copy
}

const main = async () => {
  const databases: Array<Awaited<ReturnType<typeof benchDatabase>>> = []
  try {
    const { stubUrl } = await startStub()
    const targets: Array<Target> = [{ name: "direct", url: stubUrl, headers: { "content-type": "application/json" } }]
    // Named by side as well, so that one checkout can be measured against itself.
    const nameOf = (i: number) => `${String.fromCharCode(65 + i)} ${checkouts[i]}`
    for (const [i, checkout] of checkouts.entries()) {
      const database = await benchDatabase(`bench_gateway_paired_${i}`)
      databases.push(database)
      const { serviceBase } = await startGatewayService(database.url, checkout, ports.portkey + 1 + i)
      targets.push({ name: nameOf(i), ...(await configureService(serviceBase, !screened, screened)) })
    }
    for (const target of targets.slice(1))
      await cannon({ url: target.url, method: "POST", body, headers: target.headers, connections: 20, duration: 3 })
    await pause(5_000)
    const sockets = mode === "c1" ? 1 : 50
    const agents = new Map(targets.map((target) => [target.name, new Agent({ keepAlive: true, maxSockets: sockets })]))
    const latencies = new Map(targets.map((target) => [target.name, [] as Array<number>]))
    // Each 500 requests/s slice's own p99, in order, to show whether a tail is spread or a few stalls.
    const sliceP99s = new Map(targets.map((target) => [target.name, [] as Array<number>]))
    let failed = 0
    // Two unrecorded rounds first at 500 requests/s: the services' first seconds at that load (JIT, pools) are not its steady state.
    const warmUp = mode === "c1" ? 0 : 2
    for (let round = -warmUp; round < rounds; round++) {
      for (const target of shuffled(targets)) {
        const agent = agents.get(target.name)!
        if (mode === "c1") {
          const { status, ms } = await timedRequest(target, body, agent)
          if (status >= 200 && status < 300) latencies.get(target.name)!.push(ms)
          else failed += 1
        } else {
          const slice = await openLoop(target, body, agent, 500, 1)
          if (round < 0) continue
          latencies.get(target.name)!.push(...slice.latencies)
          sliceP99s.get(target.name)!.push(
            quantile(
              [...slice.latencies].sort((x, y) => x - y),
              0.99
            )
          )
          failed += slice.failed
        }
      }
    }
    for (const agent of agents.values()) agent.destroy()
    const percentiles = (name: string) => {
      const sorted = [...latencies.get(name)!].sort((a, b) => a - b)
      const slices = mode === "c1" ? {} : { slice_p99s_ms: sliceP99s.get(name)!.map(Math.round) }
      return { p50_ms: quantile(sorted, 0.5), p99_ms: quantile(sorted, 0.99), samples: sorted.length, ...slices }
    }
    const direct = percentiles("direct")
    const added = checkouts.map((checkout, i) => {
      const own = percentiles(nameOf(i))
      return {
        checkout,
        ...own,
        added_p50_ms: Math.round((own.p50_ms - direct.p50_ms) * 100) / 100,
        added_p99_ms: Math.round((own.p99_ms - direct.p99_ms) * 100) / 100
      }
    })
    const first = added[0]!
    const ratio = (x: number, y: number) => Math.round((x / y) * 100) / 100
    const result = {
      mode,
      screened,
      rounds,
      failed,
      direct,
      gateways: added,
      // Each later checkout's added latency over the first's (B over A, C over A, ...).
      over_a: added.slice(1).map((other) => ({
        checkout: other.checkout,
        added_p50: ratio(other.added_p50_ms, first.added_p50_ms),
        added_p99: ratio(other.added_p99_ms, first.added_p99_ms)
      }))
    }
    printAndSave(
      "gateway-paired",
      `gateway-paired${mode === "c1" ? "" : "-rate500"}${screened ? "-screened" : ""}.json`,
      result
    )
  } finally {
    await endRun(children, 2000, databases)
  }
  process.exit(0)
}

void main()
