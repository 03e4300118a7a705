/**
 * Authorization benchmarks, printed as JSON lines and saved to
 * bench/results/authorize.json:
 *  1. evaluator: median time of one evaluation of 200 tool-permission rules,
 *     our pipeline (content checker over compiled policies) against
 *     @cedar-policy/cedar-wasm with an equivalent policy set, same run;
 *  2. http: autocannon POST /v1/events against the all-in-one service on
 *     Kafka + PostgreSQL with 200 enabled policies, beside a bare node:http
 *     JSON echo server measured in the same run (50 connections each).
 * Usage: npx tsx bench/authorize.ts [seconds=10]
 * Needs PostgreSQL (BENCH_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test)
 * and Kafka (BENCH_KAFKA_BROKERS, default 127.0.0.1:9092).
 */
import { isAuthorized, preparsePolicySet, statefulIsAuthorized } from "@cedar-policy/cedar-wasm/nodejs"
import { Schema } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { normalizeProfile } from "../src/catalog/Agents.js"
import { PolicyDocument } from "../src/catalog/Domain.js"
import { compilePolicy } from "../src/catalog/PolicyLanguage.js"
import { contentChecker } from "../src/authorization/checkers/Content.js"
import { decide } from "../src/authorization/Pipeline.js"
import { admin, adminUrl, cannon, decisionTenant, startService } from "./support.js"

const seconds = Number(process.argv[2] ?? 10)
const RULES = 200
const tool = (i: number) => `tool_${String(i).padStart(3, "0")}`

const median = (values: Array<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

// ---------------------------------------------------------------- 1. evaluator vs Cedar
const evaluatorBench = () => {
  const policies = Array.from({ length: RULES }, (_, i) =>
    compilePolicy(
      Schema.decodeUnknownSync(PolicyDocument)({
        id: `deny-${tool(i)}`,
        description: `Never call ${tool(i)}`,
        family: "tool",
        severity: "high",
        action: i % 2 === 0 ? "deny" : "permit",
        match: { type: "literal", value: tool(i), target: "operation", case_sensitive: true }
      })
    )
  )
  const agent = normalizeProfile({
    agent_id: "bench",
    display_name: "Bench",
    authority: {},
    scope: {},
    tone: { target: "neutral" }
  })
  const modes = {
    content: "enforce",
    profile: "off",
    param: "off",
    flow: "off",
    approval: "off",
    memory: "off"
  } as const
  const ours = (operation: string) =>
    decide(
      {
        agentId: "bench",
        kind: "output.proposed",
        action: { operation },
        agent,
        policies,
        labelPolicies: new Map(),
        tools: new Map(),
        granted: false
      },
      [contentChecker],
      modes
    ).effect

  const cedarText = [
    "permit(principal, action, resource);",
    ...Array.from({ length: RULES }, (_, i) =>
      i % 2 === 0 ? `forbid(principal, action == Action::"call", resource == Tool::"${tool(i)}");` : ""
    ).filter((rule) => rule !== "")
  ].join("\n")
  const parsed = preparsePolicySet("bench", { staticPolicies: cedarText })
  if (parsed.type !== "success") throw new Error(JSON.stringify(parsed))
  const cedar = (operation: string) =>
    statefulIsAuthorized({
      principal: { type: "Agent", id: "bench" },
      action: { type: "Action", id: "call" },
      resource: { type: "Tool", id: operation },
      context: {},
      preparsedPolicySetId: "bench",
      entities: []
    })

  // Same answers on the same requests, or the comparison means nothing.
  for (const operation of [tool(150), tool(151), "tool_999"]) {
    const answer = cedar(operation)
    const cedarEffect = answer.type === "success" ? answer.response.decision : "error"
    const ourEffect = ours(operation)
    if ((cedarEffect === "deny") !== (ourEffect === "deny"))
      throw new Error(`disagree on ${operation}: ${cedarEffect} vs ${ourEffect}`)
  }
  void isAuthorized
  const time = (run: (operation: string) => unknown) => {
    const samples: Array<number> = []
    for (let round = 0; round < 30_000; round++) {
      const operation = tool(round % (RULES + 20))
      const started = process.hrtime.bigint()
      run(operation)
      samples.push(Number(process.hrtime.bigint() - started))
    }
    return samples.slice(5_000) // after warm-up
  }
  const ourSamples = time(ours)
  const cedarSamples = time(cedar)
  return {
    rules: RULES,
    evaluations: ourSamples.length,
    ours_median_ns: median(ourSamples),
    cedar_median_ns: median(cedarSamples),
    goal_met: median(ourSamples) <= median(cedarSamples)
  }
}

// ---------------------------------------------------------------- 2. HTTP
const echoServer = () =>
  new Promise<{ url: string; close: () => void }>((resolve) => {
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        response.writeHead(200, { "content-type": "application/json" })
        response.end(Buffer.concat(chunks).length > 0 ? Buffer.concat(chunks) : "{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resolve({
        url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`,
        close: () => server.close()
      })
    })
  })

const httpBench = async () => {
  const echo = await echoServer()
  const bare = await cannon({
    url: echo.url,
    method: "POST",
    body: '{"hello":"world"}',
    headers: { "content-type": "application/json" },
    connections: 50,
    duration: seconds
  })
  echo.close()

  const database = `bench_authorize_${Date.now()}`
  await admin(`create database ${database}`)
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  const port = 40_000 + Math.floor(Math.random() * 10_000)
  const stop = await startService(url.toString(), port)
  try {
    const base = `http://127.0.0.1:${port}`
    const target = await decisionTenant(base, RULES)
    await cannon({ ...target, connections: 10, duration: 3 }) // warm-up
    const service = await cannon({ ...target, connections: 50, duration: seconds })
    return {
      connections: 50,
      seconds,
      enabled_policies: RULES,
      bare_requests_per_s: Math.round(bare.requests.average),
      bare_p99_ms: bare.latency.p99,
      decisions_per_s: Math.round(service.requests.average),
      decisions_p50_ms: service.latency.p50,
      decisions_p99_ms: service.latency.p99,
      non_2xx: service.non2xx,
      errors: service.errors,
      ratio_to_bare: Math.round((service.requests.average / bare.requests.average) * 1000) / 1000,
      goal_met: service.requests.average >= 0.35 * bare.requests.average && service.latency.p99 <= 10
    }
  } finally {
    stop()
    await new Promise((resolve) => setTimeout(resolve, 2000))
    await admin(`drop database if exists ${database} with (force)`)
  }
}

const main = async () => {
  const evaluator = evaluatorBench()
  console.log(JSON.stringify({ bench: "authorize-evaluator", ...evaluator }))
  const http = await httpBench()
  console.log(JSON.stringify({ bench: "authorize-http", ...http }))
  mkdirSync(new URL("results/", import.meta.url), { recursive: true })
  writeFileSync(
    new URL("results/authorize.json", import.meta.url),
    `${JSON.stringify({ at: new Date().toISOString(), evaluator, http }, null, 2)}\n`
  )
  process.exit(0)
}

void main()
