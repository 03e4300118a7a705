/**
 * What the gateway benchmarks set up: a stub provider, the service's
 * tenant, connection, route and price (with a budget, or guardrails), and
 * the processes they start. Shared by bench/gateway.ts, bench/gateway-cpu.ts
 * and bench/gateway-paired.ts.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { brokers, installPack, registerBenchAgent, SERVICE_NODE_FLAGS } from "./support.js"

export const STUB_DELAY_MS = 20
/** This run's ports, random so that runs (and helpers) on one machine do not collide. */
const basePort = 40_000 + Math.floor(Math.random() * 10_000)
export const ports = { stub: basePort, service: basePort + 1, portkey: basePort + 2 }

/** The stub provider: a chat completion after a fixed delay (its own node process). */
export const STUB_SOURCE = `
const { createServer } = require("node:http")
const answer = JSON.stringify({
  id: "chatcmpl-bench", object: "chat.completion", created: 1700000000, model: "bench-model",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello there!" }, finish_reason: "stop", logprobs: null }],
  usage: { prompt_tokens: 24, completion_tokens: 4, total_tokens: 28 }
})
const server = createServer((request, response) => {
  request.resume()
  request.on("end", () => setTimeout(() => {
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) })
    response.end(answer)
  }, ${STUB_DELAY_MS}))
})
server.keepAliveTimeout = 60000
server.listen(${ports.stub}, "127.0.0.1")
`

/** The request every target gets. */
export const body = JSON.stringify({
  model: "bench-model",
  max_tokens: 64,
  messages: [{ role: "user", content: "Say hello to the benchmark." }]
})

/** Every process `start` spawned, to stop at the end. */
export const children: Array<ChildProcess> = []
export const start = (
  command: string,
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  cwd = process.cwd()
) => {
  const child = spawn(command, [...args], { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout?.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)))
  child.stderr?.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)))
  children.push(child)
  return { child, output: () => output }
}

export const waitFor = async (check: () => Promise<boolean>, what: string, output: () => string) => {
  const deadline = Date.now() + 90_000
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return
    await new Promise((resolve) => setTimeout(resolve, 300))
  }
  throw new Error(`${what} did not start:\n${output()}`)
}

const json = async (url: string, init: RequestInit) => {
  const response = await fetch(url, init)
  const parsed = (await response.json()) as Record<string, unknown>
  if (!response.ok) throw new Error(`${init.method ?? "GET"} ${url}: ${response.status} ${JSON.stringify(parsed)}`)
  return parsed
}

/**
 * Guardrails for the screened target (issue 18): the `pii-basic` and
 * `prompt-injection` packs and 50 content policies (phrases the traffic never
 * holds), all enforced on inputs and outputs, so every call is decided twice.
 */
const screenEverything = async (base: string, auth: Record<string, string>) => {
  for (const pack of ["pii-basic", "prompt-injection"]) await installPack(base, auth, pack)
  for (let i = 0; i < 50; i++)
    await json(`${base}/v1/policies`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        id: `phrase-${i}`,
        description: `Never say phrase ${i}`,
        family: "content",
        severity: "high",
        action: "deny",
        applies_to: ["input.received", "output.proposed"],
        match: { type: "literal", value: `forbidden phrase ${String(i).padStart(3, "0")}`, target: "content" }
      })
    })
}

/**
 * Signs up, and sets a connection to the stub, a route, a price and (unless
 * `budget` is false) a budget; answers the route's URL and a key.
 */
export const configureService = async (base: string, budget = true, screened = false) => {
  const password = createHash("sha256").update("bench").digest("hex")
  const session = await json(`${base}/v1/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: `bench-${Date.now()}`, password })
  })
  const auth = { authorization: `Bearer ${String(session["jwt"])}`, "content-type": "application/json" }
  const key = await json(`${base}/v1/api-keys`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ name: "bench" })
  })
  const connection = await json(`${base}/v1/gateway/provider-connections`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({
      display_name: "Stub",
      kind: "chat_compatible",
      provider_api_key: "sk-bench",
      base_url: `http://127.0.0.1:${ports.stub}/v1`
    })
  })
  await registerBenchAgent(base, auth, "bench-bot")
  const route = await json(`${base}/v1/gateway/routes`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ agent_id: "bench-bot", display_name: "Bench", provider_connection_id: connection["id"] })
  })
  await json(`${base}/v1/llm-pricing/bench-model`, {
    method: "PUT",
    headers: auth,
    body: JSON.stringify({ input_per_million_minor: 250, output_per_million_minor: 1000 })
  })
  // A cap no run reaches: every request is admitted, strictly (max_tokens), and settled.
  if (screened) await screenEverything(base, auth)
  if (budget)
    await json(`${base}/v1/settings`, {
      method: "PATCH",
      headers: auth,
      body: JSON.stringify({ config: { llm_budget: { cap_minor: 1_000_000_000, currency: "usd", window: "month" } } })
    })
  return {
    url: `${base}/v1/gateway/${String(route["id"])}/chat_style/chat/completions`,
    headers: { authorization: `Bearer ${String(key["plaintext_key"])}`, "content-type": "application/json" }
  }
}

/** Starts the stub provider and waits until it answers. */
export const startStub = async () => {
  const stub = start("node", ["-e", STUB_SOURCE])
  const stubUrl = `http://127.0.0.1:${ports.stub}/v1/chat/completions`
  await waitFor(async () => (await fetch(stubUrl, { method: "POST", body })).ok, "stub", stub.output)
  return { stub, stubUrl }
}

/**
 * Starts the all-in-one service on PostgreSQL (`databaseUrl`) and Kafka, and
 * waits until it is ready; `checkout` runs another checkout's service (its
 * own sources, same node_modules) on `port`; `nodeFlags` replaces the service's node flags.
 */
export const startGatewayService = async (
  databaseUrl: URL,
  checkout = process.cwd(),
  port = ports.service,
  nodeFlags: ReadonlyArray<string> = SERVICE_NODE_FLAGS
) => {
  // BENCH_CPU_PROFILE=<dir>: a V8 CPU profile of the service, as in bench/support.ts.
  const profile = process.env["BENCH_CPU_PROFILE"]
  const profileArgs = profile === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profile}`]
  const args = [...nodeFlags, ...profileArgs, "--import", "tsx", "services/all-in-one/main.ts"]
  const env = {
    DATABASE_URL: databaseUrl.toString(),
    KAFKA_BROKERS: brokers,
    KAFKA_TOPIC_PREFIX: `bench${port}t${Date.now()}.`,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    DATA_DIR: `/tmp/guardrail-bench-${port}`,
    DATABASE_POOL_SIZE: "20",
    HTTP_URL_ALLOWLIST: "127.0.0.1"
  }
  const service = start("node", args, env, checkout)
  const serviceBase = `http://127.0.0.1:${port}`
  await waitFor(async () => (await fetch(`${serviceBase}/readyz`)).ok, "service", service.output)
  return { service, serviceBase }
}
