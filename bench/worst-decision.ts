/**
 * The most one decision can ask of the API thread: a workspace at its limits
 * (MAX_POLICIES_PER_WORKSPACE policies, MAX_REGEX_PATTERNS_PER_WORKSPACE of them
 * distinct regexes, the rest literals, every guard pack installed) deciding
 * content at MAX_MATCH_CONTENT_BYTES. Prints the decision's latency (median
 * of `runs`, after one warm-up) for content of 1 KiB, 64 KiB and the cap.
 *
 *   npx tsx bench/worst-decision.ts [policies] [regexes] [runs]
 *
 * Saves bench/results/worst-decision.json. Needs Kafka and PostgreSQL.
 */
import { benchDatabase, benchTenant, endRun, installPack, printAndSave, startService } from "./support.js"

const policies = Number(process.argv[2] ?? 1_000)
const regexes = Number(process.argv[3] ?? 128)
const runs = Number(process.argv[4] ?? 5)
const port = 18_475
const PACKS = ["pii-basic", "secrets", "prompt-injection", "system-prompt-leak"]
const CAP_BYTES = 262_144

const policyText = (i: number) =>
  [
    `id: worst-${i}`,
    `description: worst case ${i}`,
    "family: content",
    "severity: high",
    "action: deny",
    "match:",
    "  target: content",
    i < regexes ? `  type: regex\n  value: 'code${i}-[0-9]{6}'` : `  type: literal\n  value: never said phrase ${i}`
  ].join("\n")

/** Benign text of about `bytes` UTF-8 bytes that no policy matches. */
const contentOf = (bytes: number) =>
  "The order ships tomorrow and arrives by Friday; thanks for waiting. ".repeat(Math.ceil(bytes / 68)).slice(0, bytes)

const database = await benchDatabase("bench_worst_decision")
const stop = await startService(database.url.href, port)
try {
  const base = `http://127.0.0.1:${port}`
  const tenant = await benchTenant(base, 0)
  const yaml = { ...tenant.userHeaders, "content-type": "application/yaml" }
  for (let i = 0; i < policies - PACKS.length; i++) {
    const response = await fetch(`${base}/v1/policies`, { method: "POST", headers: yaml, body: policyText(i) })
    if (response.status !== 201) throw new Error(`policy ${i}: ${response.status} ${await response.text()}`)
  }
  for (const pack of PACKS) await installPack(base, tenant.userHeaders, pack)
  const decide = async (content: string) => {
    const started = performance.now()
    const response = await fetch(`${base}/v1/events`, {
      method: "POST",
      headers: tenant.keyHeaders,
      body: JSON.stringify({
        kind: "output.proposed",
        principal: { agent_id: "bench", environment_id: tenant.environmentId, workspace_id: tenant.workspaceId },
        action: { operation: "reply", content }
      })
    })
    const body = (await response.json()) as { effect?: string }
    if (response.status !== 200) throw new Error(`decision: ${response.status} ${JSON.stringify(body)}`)
    return { ms: performance.now() - started, effect: body.effect }
  }
  const figures: Record<string, unknown> = { policies, regexes, runs }
  for (const [label, bytes] of [
    ["1 KiB", 1_024],
    ["64 KiB", 65_536],
    ["cap (256 KiB)", CAP_BYTES]
  ] as const) {
    const content = contentOf(bytes)
    await decide(content)
    const times: Array<number> = []
    let effect: string | undefined
    for (let run = 0; run < runs; run++) {
      const result = await decide(content)
      times.push(result.ms)
      effect = result.effect
    }
    times.sort((a, b) => a - b)
    figures[label] = { median_ms: Math.round(times[Math.floor(times.length / 2)]!), effect }
  }
  printAndSave("worst-decision", "worst-decision.json", figures)
} finally {
  await endRun([{ kill: () => (stop(), true) }], 2_000, [database])
}
