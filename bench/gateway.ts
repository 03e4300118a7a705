/**
 * Gateway benchmark, printed as JSON lines and saved to bench/results/gateway.json.
 *
 * A stub chat-completions provider (its own node process, fixed 20 ms delay)
 * is called three ways in the same run, each under the same autocannon loads:
 *  - directly (the baseline),
 *  - through this service's gateway (all-in-one on PostgreSQL + Kafka) with
 *    an active LLM budget, a price for the model and `max_tokens` on every
 *    request, so each call takes the strict path (reservation, settlement and
 *    a usage event through the outbox),
 *  - through `@portkey-ai/gateway` (its npm build, `--headless`, custom host
 *    pointed at the stub), without and with its own guardrail checks
 *    (bench/portkey-guardrails.ts).
 * The gateway is also measured without a budget (usage still recorded), for
 * the cost breakdown, and with guardrails (`screenEverything`: two guard
 * packs and 50 content policies, the request and the reply each decided;
 * no budget, as Portkey's guarded target has none), beside the ceiling of that
 * screened work: bench/ceiling-server.ts `gateway-screened`, a plain node:http
 * program deciding and durably storing the same two decisions per call.
 * Loads: concurrency 1; a fixed 500 requests/s; and as fast as 100 connections go (sustained requests/s). Added latency = gateway percentile
 * minus the direct percentile of the same load. Concurrency 1 is timed per
 * request to 0.01 ms (`sequential`); the other loads by autocannon (whole ms).
 *
 * Usage: npx tsx bench/gateway.ts [seconds=10]
 * Needs PostgreSQL (BENCH_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test)
 * and Kafka (BENCH_KAFKA_BROKERS, default 127.0.0.1:9092).
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { type Load, LOADS, measure as measureTarget, type Target } from "./gateway-measure.js"
import {
  body,
  children,
  configureService,
  ports,
  start,
  startGatewayService,
  startStub,
  STUB_DELAY_MS,
  waitFor
} from "./gateway-setup.js"
import { portkeyTargets } from "./portkey-guardrails.js"
import { benchDatabase, endRun, startCeilingServer, waitUntilIdle } from "./support.js"

const seconds = Number(process.argv[2] ?? 10)

const measure = (target: Target, settle?: () => Promise<void>) => measureTarget(target, body, seconds, settle)

const main = async () => {
  const database = await benchDatabase("bench_gateway")
  try {
    const { stubUrl } = await startStub()
    const { service, serviceBase } = await startGatewayService(database.url)
    const ours = await configureService(serviceBase)
    const oursWithoutBudget = await configureService(serviceBase, false)
    const oursScreened = await configureService(serviceBase, false, true)

    const portkeyEntry = createRequire(import.meta.url).resolve("@portkey-ai/gateway/build/start-server.js")
    const portkey = start("node", [portkeyEntry, `--port=${ports.portkey}`, "--headless"])
    const { plain: portkeyTarget, guarded: portkeyGuardedTarget } = portkeyTargets(ports.portkey, ports.stub)
    await waitFor(
      async () => (await fetch(portkeyTarget.url, { method: "POST", body, headers: portkeyTarget.headers })).ok,
      "portkey",
      portkey.output
    )

    // Portkey before ours: our service's stream workers digest each run's usage events after it, and
    // that work must not land on Portkey's measurement (each gateway is measured on a quiet machine).
    const direct = await measure({ name: "direct", url: stubUrl, headers: { "content-type": "application/json" } })
    console.log(JSON.stringify({ bench: "gateway", target: "direct", ...direct }))
    const portkeyResult = await measure(portkeyTarget)
    console.log(JSON.stringify({ bench: "gateway", target: "portkey", ...portkeyResult }))
    // Portkey with its own built-in guardrail checks (bench/portkey-guardrails.ts), input and output.
    const portkeyGuarded = await measure(portkeyGuardedTarget)
    console.log(JSON.stringify({ bench: "gateway", target: "portkey-guarded", ...portkeyGuarded }))
    // The ceiling of the screened target: a plain node:http program doing its guaranteed work
    // (two decisions, each signed and durable in PostgreSQL; bench/ceiling-server.ts `gateway-screened`).
    const ceiling = await startCeilingServer("gateway-screened", database.url.toString(), { STUB_URL: stubUrl })
    const ceilingScreened = await measure({
      name: "ceiling-screened",
      url: `${ceiling.base}/v1/chat/completions`,
      headers: { "content-type": "application/json" }
    }).finally(() => ceiling.stop())
    console.log(JSON.stringify({ bench: "gateway", target: "ceiling-screened", ...ceilingScreened }))
    const quiet = () => waitUntilIdle([service.child.pid!, portkey.child.pid!])
    const guardrail = await measure({ name: "guardrail", ...ours }, quiet)
    console.log(JSON.stringify({ bench: "gateway", target: "guardrail", ...guardrail }))
    // For the breakdown: the same gateway without a budget (usage still recorded, no admission).
    const unbudgeted = await measure({ name: "guardrail-no-budget", ...oursWithoutBudget }, quiet)
    console.log(JSON.stringify({ bench: "gateway", target: "guardrail-no-budget", ...unbudgeted }))
    // With guardrails: the request's user message and the reply each decided (packs + 50 policies).
    const screened = await measure({ name: "guardrail-screened", ...oursScreened }, quiet)
    console.log(JSON.stringify({ bench: "gateway", target: "guardrail-screened", ...screened }))

    const added = (result: typeof direct) =>
      Object.fromEntries(
        LOADS.map((load) => [
          load,
          {
            added_p50_ms: Math.round((result[load].p50_ms - direct[load].p50_ms) * 100) / 100,
            added_p99_ms: Math.round((result[load].p99_ms - direct[load].p99_ms) * 100) / 100
          }
        ])
      ) as Record<Load, { added_p50_ms: number; added_p99_ms: number }>
    const summary = {
      stub_delay_ms: STUB_DELAY_MS,
      seconds,
      guardrail: added(guardrail),
      portkey: added(portkeyResult),
      guardrail_without_budget: added(unbudgeted),
      guardrail_screened: added(screened),
      portkey_guarded: added(portkeyGuarded),
      ceiling_screened: added(ceilingScreened),
      sustained_requests_per_s: {
        direct: direct.sustained.requests_per_s,
        guardrail: guardrail.sustained.requests_per_s,
        portkey: portkeyResult.sustained.requests_per_s,
        guardrail_without_budget: unbudgeted.sustained.requests_per_s,
        guardrail_screened: screened.sustained.requests_per_s,
        portkey_guarded: portkeyGuarded.sustained.requests_per_s,
        ceiling_screened: ceilingScreened.sustained.requests_per_s
      }
    }
    // Issue 18: screened added p50 and p99 below Portkey's with its checks at both loads, sustained >= 2x.
    const screenedGoalMet =
      LOADS.filter((load) => load !== "sustained").every(
        (load) =>
          summary.guardrail_screened[load].added_p50_ms < summary.portkey_guarded[load].added_p50_ms &&
          summary.guardrail_screened[load].added_p99_ms < summary.portkey_guarded[load].added_p99_ms
      ) && screened.sustained.requests_per_s >= 2 * portkeyGuarded.sustained.requests_per_s
    const goalMet =
      summary.guardrail.concurrency_1.added_p99_ms < summary.portkey.concurrency_1.added_p99_ms &&
      summary.guardrail.rate_500.added_p99_ms < summary.portkey.rate_500.added_p99_ms
    console.log(
      JSON.stringify({ bench: "gateway-summary", ...summary, goal_met: goalMet, screened_goal_met: screenedGoalMet })
    )
    mkdirSync(new URL("results/", import.meta.url), { recursive: true })
    writeFileSync(
      new URL("results/gateway.json", import.meta.url),
      `${JSON.stringify({ at: new Date().toISOString(), summary: { ...summary, goal_met: goalMet, screened_goal_met: screenedGoalMet }, direct, guardrail, portkey: portkeyResult, portkey_guarded: portkeyGuarded, guardrail_without_budget: unbudgeted, guardrail_screened: screened, ceiling_screened: ceilingScreened }, null, 2)}\n`
    )
  } finally {
    await endRun(children, 2000, [database])
  }
  process.exit(0)
}

void main()
