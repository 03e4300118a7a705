/**
 * MCP gateway benchmark: what the gateway adds per `tools/call`.
 *
 * An `@modelcontextprotocol/sdk` server on loopback (test/mcp/mcp-upstream.ts,
 * SSE answers) is called with the official SDK client two ways in the same
 * run, one call each in turn so both see the same machine: directly, and
 * through this service's MCP gateway (all-in-one on PostgreSQL + Kafka),
 * where each call is decided as `output.proposed` and its result as
 * `tool.result`, with the `pii-basic` and `prompt-injection` guard packs
 * installed and enabled. In turn with them, one `POST /v1/events` deciding
 * the same call, for scale: a call through the gateway waits for two such
 * decisions (each durable before it answers). Added latency = gateway percentile minus direct
 * percentile. Prints a JSON line and saves it to bench/results/mcp.json.
 *
 * Usage: npx tsx bench/mcp.ts [seconds=20]
 * Needs PostgreSQL (BENCH_POSTGRES_URL) and Kafka (BENCH_KAFKA_BROKERS), as bench/gateway.ts.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { createHash } from "node:crypto"
import { mkdirSync, writeFileSync } from "node:fs"
import { startMcpUpstream } from "../test/mcp/mcp-upstream.js"
import { admin, adminUrl, installPack, json, registerBenchAgent, startService } from "./support.js"

const seconds = Number(process.argv[2] ?? 20)
const port = 41_000 + Math.floor(Math.random() * 9_000)
const base = `http://127.0.0.1:${port}`

const expectOk = (what: string, body: Record<string, unknown>) => {
  if ("error" in body) throw new Error(`${what}: ${JSON.stringify(body)}`)
  return body
}

/** A signed-up workspace with a runtime key, the two packs enabled, and the upstream registered. */
const configure = async (upstreamUrl: string) => {
  const password = createHash("sha256").update("bench").digest("hex")
  const session = expectOk(
    "signup",
    await json(`${base}/v1/auth/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: `bench-${Date.now()}`, password })
    })
  )
  const auth = { authorization: `Bearer ${String(session["jwt"])}`, "content-type": "application/json" }
  const key = expectOk(
    "api key",
    await json(`${base}/v1/api-keys`, { method: "POST", headers: auth, body: JSON.stringify({ name: "bench" }) })
  )
  await registerBenchAgent(base, auth, "bench-bot")
  for (const pack of ["pii-basic", "prompt-injection"]) {
    expectOk(pack, await installPack(base, auth, pack))
  }
  const server = expectOk(
    "mcp server",
    await json(`${base}/v1/mcp/servers`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ display_name: "Bench", url: upstreamUrl, agent_id: "bench-bot" })
    })
  )
  const workspaces = await json(`${base}/v1/team/my-workspaces`, {
    headers: { ...auth, "x-service-user-id": String(session["user_id"]) }
  })
  const workspaceId = (workspaces["workspaces"] as Array<{ id: string }>)[0]!.id
  const environments = await json(`${base}/v1/environments`, { headers: auth })
  const environmentId = (environments["environments"] as Array<{ id: string }>)[0]!.id
  return {
    url: `${base}/v1/mcp/${String(server["id"])}`,
    key: String(key["plaintext_key"]),
    principal: { agent_id: "bench-bot", environment_id: environmentId, workspace_id: workspaceId }
  }
}

const connect = async (url: string, headers: Record<string, string> = {}) => {
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }))
  return client
}

const timed = async (client: Client, orderId: string) => {
  const started = performance.now()
  const result = await client.callTool({ name: "lookup_order", arguments: { order_id: orderId } })
  if (result.isError === true) throw new Error(`tools/call failed: ${JSON.stringify(result.content)}`)
  return performance.now() - started
}

/** One `POST /v1/events` with the same policies: what one of the two decisions of a call costs alone. */
const timedDecision = async (key: string, principal: unknown, orderId: string) => {
  const started = performance.now()
  const response = await fetch(`${base}/v1/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      kind: "output.proposed",
      principal,
      action: { operation: "lookup_order", params: { order_id: orderId } }
    })
  })
  await response.arrayBuffer()
  if (!response.ok) throw new Error(`POST /v1/events: ${response.status}`)
  return performance.now() - started
}

const quantile = (sorted: ReadonlyArray<number>, q: number) =>
  Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 100) / 100

const summary = (latencies: ReadonlyArray<number>) => {
  const sorted = [...latencies].sort((a, b) => a - b)
  return { p50_ms: quantile(sorted, 0.5), p99_ms: quantile(sorted, 0.99), calls: sorted.length }
}

const main = async () => {
  const upstream = await startMcpUpstream()
  const database = `bench_mcp_${Date.now()}`
  await admin(`create database ${database}`)
  const databaseUrl = new URL(adminUrl)
  databaseUrl.pathname = `/${database}`
  const stop = await startService(databaseUrl.toString(), port, {
    HTTP_URL_ALLOWLIST: "127.0.0.1",
    GATEWAY_ENCRYPTION_KEY: "bench-gateway-encryption-key-0123456789abcdef"
  })
  try {
    const gateway = await configure(upstream.url)
    const direct = await connect(upstream.url)
    const guarded = await connect(gateway.url, { authorization: `Bearer ${gateway.key}` })
    for (let i = 0; i < 100; i++) {
      await timed(direct, `w${i}`)
      await timed(guarded, `w${i}`)
    }
    const directMs: Array<number> = []
    const gatewayMs: Array<number> = []
    const decisionMs: Array<number> = []
    const until = Date.now() + seconds * 1000
    for (let i = 0; Date.now() < until; i++) {
      directMs.push(await timed(direct, `o${i}`))
      gatewayMs.push(await timed(guarded, `o${i}`))
      decisionMs.push(await timedDecision(gateway.key, gateway.principal, `o${i}`))
    }
    await Promise.all([direct.close(), guarded.close()])
    const [plain, through] = [summary(directMs), summary(gatewayMs)]
    const line = JSON.stringify({
      bench: "mcp",
      seconds,
      direct: plain,
      gateway: through,
      one_decision_over_http: summary(decisionMs),
      added_p50_ms: Math.round((through.p50_ms - plain.p50_ms) * 100) / 100,
      added_p99_ms: Math.round((through.p99_ms - plain.p99_ms) * 100) / 100
    })
    console.log(line)
    mkdirSync(new URL("results/", import.meta.url), { recursive: true })
    writeFileSync(new URL("results/mcp.json", import.meta.url), `${line}\n`)
  } finally {
    stop()
    await upstream.close()
    await admin(`drop database if exists ${database} with (force)`).catch(() => undefined)
  }
}

await main()
