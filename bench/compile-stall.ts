/**
 * What one workspace's heavy requests do to another workspace's decisions.
 * Workspace A decides at concurrency 1 (`POST /v1/events`, 20 policies) for
 * `seconds`, first alone, then while workspace B sends, back to back:
 * - `compile`: `POST /v1/policies/validate`, each with three new patterns near
 *   the expansion bound (the most one request's compile budget allows);
 * - `decide`: decisions of 256 KiB over its 32 regex policies.
 * Prints A's decision p50 / p99 / max in both phases and B's answers by status
 * (`compile`: 429 once B's compile allowance is spent) or effect (`decide`:
 * defer once B's decision allowance is spent).
 *
 *   npx tsx bench/compile-stall.ts [seconds] [compile|decide]
 *
 * Saves bench/results/compile-stall[-decide].json. Needs Kafka and PostgreSQL, as bench/gateway.ts.
 */
import { randomUUID } from "node:crypto"
import { benchDatabase, benchTenant, decisionTenant, endRun, printAndSave, startService } from "./support.js"

const seconds = Number(process.argv[2] ?? 15)
const mode = process.argv[3] === "decide" ? "decide" : "compile"
const AT_CAP = "The order ships tomorrow and arrives by Friday. ".repeat(5462).slice(0, 262_144)
const port = 18_473

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/** Decisions one after another until `until`: their latencies in ms, sorted. */
const decideUntil = async (request: Awaited<ReturnType<typeof decisionTenant>>, until: number) => {
  const latencies: Array<number> = []
  while (Date.now() < until) {
    const started = performance.now()
    const response = await fetch(request.url, { method: "POST", headers: request.headers, body: request.body })
    await response.arrayBuffer()
    latencies.push(performance.now() - started)
  }
  return latencies.sort((a, b) => a - b)
}

const summary = (latencies: ReadonlyArray<number>) => ({
  decisions: latencies.length,
  p50_ms: Math.round(percentile(latencies, 50) * 10) / 10,
  p99_ms: Math.round(percentile(latencies, 99) * 10) / 10,
  max_ms: Math.round((latencies.at(-1) ?? 0) * 10) / 10
})

const heavyDocument = () =>
  [
    "id: letters",
    "description: letters",
    "family: content",
    "severity: high",
    "action: deny",
    "match:",
    "  any:",
    ...[1, 2, 3].map((i) => `    - {type: regex, target: content, value: '\\p{L}{9}${randomUUID().slice(0, 8)}${i}'}`)
  ].join("\n")

const database = await benchDatabase("bench_compile_stall")
const stop = await startService(database.url.href, port)
try {
  const base = `http://127.0.0.1:${port}`
  const decisions = await decisionTenant(base, 20)
  const compiler = await benchTenant(base, 0)
  if (mode === "decide") {
    for (let i = 0; i < 32; i++) {
      await fetch(`${base}/v1/policies`, {
        method: "POST",
        headers: { ...compiler.userHeaders, "content-type": "application/yaml" },
        body: `id: code-${i}\ndescription: code ${i}\nfamily: content\nseverity: high\naction: deny\nmatch:\n  type: regex\n  value: 'code${i}-[0-9]{6}'\n  target: content\n`
      })
    }
  }
  const heavyDecision = JSON.stringify({
    kind: "output.proposed",
    principal: { agent_id: "bench", environment_id: compiler.environmentId, workspace_id: compiler.workspaceId },
    action: { operation: "reply", content: AT_CAP }
  })
  await decideUntil(decisions, Date.now() + 2_000) // warm
  const alone = await decideUntil(decisions, Date.now() + seconds * 1000)

  const statuses: Record<string, number> = {}
  const until = Date.now() + seconds * 1000
  const compiling = (async () => {
    while (Date.now() < until) {
      if (mode === "decide") {
        const response = await fetch(`${base}/v1/events`, {
          method: "POST",
          headers: compiler.keyHeaders,
          body: heavyDecision
        })
        const { effect } = (await response.json()) as { effect?: string }
        const key = `${response.status} ${effect ?? ""}`
        statuses[key] = (statuses[key] ?? 0) + 1
        continue
      }
      const response = await fetch(`${base}/v1/policies/validate`, {
        method: "POST",
        headers: { ...compiler.userHeaders, "content-type": "application/yaml" },
        body: heavyDocument()
      })
      await response.arrayBuffer()
      statuses[response.status] = (statuses[response.status] ?? 0) + 1
    }
  })()
  const contended = await decideUntil(decisions, until)
  await compiling
  printAndSave("compile-stall", mode === "decide" ? "compile-stall-decide.json" : "compile-stall.json", {
    seconds,
    mode,
    alone: summary(alone),
    while_another_workspace_compiles: summary(contended),
    other_workspace_answers: statuses
  })
} finally {
  await endRun([{ kill: () => (stop(), true) }], 2_000, [database])
}
