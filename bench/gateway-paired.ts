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
 * Usage: npx tsx bench/gateway-paired.ts <checkout A> <checkout B> [rounds=3000]
 * (the same checkout twice measures the method's own noise).
 * Saves bench/results/gateway-paired.json.
 */
import { Agent } from "node:http"
import { resolve } from "node:path"
import { quantile, type Target, timedRequest } from "./gateway-measure.js"
import { body, children, configureService, ports, startGatewayService, startStub } from "./gateway-setup.js"
import { benchDatabase, cannon, pause, printAndSave } from "./support.js"

const checkouts = [process.argv[2], process.argv[3]].map((dir) => {
  if (dir === undefined) throw new Error("usage: npx tsx bench/gateway-paired.ts <checkout A> <checkout B> [rounds]")
  return resolve(dir)
})
const rounds = Number(process.argv[4] ?? 3000)

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
    const nameOf = (i: number) => `${i === 0 ? "A" : "B"} ${checkouts[i]}`
    for (const [i, checkout] of checkouts.entries()) {
      const database = await benchDatabase(`bench_gateway_paired_${i}`)
      databases.push(database)
      const { serviceBase } = await startGatewayService(database.url, checkout, ports.portkey + 1 + i)
      targets.push({ name: nameOf(i), ...(await configureService(serviceBase)) })
    }
    for (const target of targets.slice(1))
      await cannon({ url: target.url, method: "POST", body, headers: target.headers, connections: 20, duration: 3 })
    await pause(5_000)
    const agents = new Map(targets.map((target) => [target.name, new Agent({ keepAlive: true, maxSockets: 1 })]))
    const latencies = new Map(targets.map((target) => [target.name, [] as Array<number>]))
    let failed = 0
    for (let round = 0; round < rounds; round++) {
      for (const target of shuffled(targets)) {
        const { status, ms } = await timedRequest(target, body, agents.get(target.name)!)
        if (status >= 200 && status < 300) latencies.get(target.name)!.push(ms)
        else failed += 1
      }
    }
    for (const agent of agents.values()) agent.destroy()
    const percentiles = (name: string) => {
      const sorted = [...latencies.get(name)!].sort((a, b) => a - b)
      return { p50_ms: quantile(sorted, 0.5), p99_ms: quantile(sorted, 0.99), samples: sorted.length }
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
    const [a, b] = added as [(typeof added)[number], (typeof added)[number]]
    const result = {
      rounds,
      failed,
      direct,
      gateways: added,
      b_over_a: {
        added_p50: Math.round((b.added_p50_ms / a.added_p50_ms) * 100) / 100,
        added_p99: Math.round((b.added_p99_ms / a.added_p99_ms) * 100) / 100
      }
    }
    printAndSave("gateway-paired", "gateway-paired.json", result)
  } finally {
    for (const child of children) child.kill("SIGTERM")
    await pause(2000)
    for (const database of databases) await database.drop()
  }
  process.exit(0)
}

void main()
