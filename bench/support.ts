/**
 * Pieces every benchmark shares: the PostgreSQL admin connection, the
 * all-in-one service as a child process on Kafka + PostgreSQL, autocannon
 * as a promise, and small JSON fetch and percentile helpers.
 */
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { createHash } from "node:crypto"
import pg from "pg"
import { cpuOf } from "./cpu.js"

export const adminUrl = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
export const brokers = process.env["BENCH_KAFKA_BROKERS"] ?? "127.0.0.1:9092"

/** Runs one statement on the admin database (create/drop the benchmark's database). */
export const admin = async (text: string) => {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  await client.query(text).finally(() => client.end())
}

/** Prints a run's figures as one JSON line (`bench` names it) and saves them, timed, as bench/results/<file>. */
export const printAndSave = (bench: string, file: string, result: Record<string, unknown>) => {
  console.log(JSON.stringify({ bench, ...result }))
  mkdirSync(new URL("results/", import.meta.url), { recursive: true })
  writeFileSync(
    new URL(`results/${file}`, import.meta.url),
    `${JSON.stringify({ at: new Date().toISOString(), ...result }, null, 2)}\n`
  )
}

/** A new database for one benchmark run (`<prefix>_<time>`): its URL, and `drop` for the run's end. */
export const benchDatabase = async (prefix: string) => {
  const name = `${prefix}_${Date.now()}_${Math.floor(Math.random() * 1_000)}`
  await admin(`create database ${name}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return { url, drop: () => admin(`drop database if exists ${name} with (force)`) }
}

/**
 * The end of a run: stops its processes (SIGTERM), gives them `graceMs` to
 * exit (and the database connections to close), then drops its databases.
 */
export const endRun = async (
  processes: ReadonlyArray<{ kill: (signal: NodeJS.Signals) => boolean }>,
  graceMs: number,
  databases: ReadonlyArray<{ readonly drop: () => Promise<unknown> }>
) => {
  for (const child of processes) child.kill("SIGTERM")
  await pause(graceMs)
  for (const database of databases) await database.drop()
}

/**
 * Node flags the service runs with, as in package.json's start scripts and
 * the Dockerfile: V8's garbage collector on the thread that needs it, not on
 * helper threads that compete for the same few cores (docs/operations.md).
 */
export const SERVICE_NODE_FLAGS = ["--single-threaded-gc", "--max-semi-space-size=32"] as const

/**
 * Starts `services/all-in-one` over `databaseUrl` on `port` (fresh topic
 * prefix, LOG_LEVEL warn) and answers a function that stops it, once
 * /readyz answers 200 (its `pid` for CPU readings). BENCH_CPU_PROFILE=<dir> writes a V8 CPU profile of
 * the service there (for finding hot spots).
 */
export const startService = (
  databaseUrl: string,
  port: number,
  env: Record<string, string> = {},
  service: "all-in-one" | "api" | "stream-worker" = "all-in-one"
) =>
  new Promise<(() => void) & { readonly pid: number }>((resolve, reject) => {
    const profile = process.env["BENCH_CPU_PROFILE"]
    const nodeArgs = profile === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profile}`]
    const child = spawn(
      "node",
      [...SERVICE_NODE_FLAGS, ...nodeArgs, "--import", "tsx", `services/${service}/main.ts`],
      {
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          KAFKA_BROKERS: brokers,
          KAFKA_TOPIC_PREFIX: `bench${Date.now()}.`,
          PORT: String(port),
          HOST: "127.0.0.1",
          LOG_LEVEL: "warn",
          DATA_DIR: `/tmp/guardrail-bench-${port}`,
          DATABASE_POOL_SIZE: "20",
          ...env
        },
        stdio: ["ignore", "pipe", "pipe"]
      }
    )
    let output = ""
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${output}`)), 90_000)
    const poll = setInterval(() => {
      fetch(`http://127.0.0.1:${port}/readyz`).then(
        (response) => {
          if (response.ok) {
            clearInterval(poll)
            clearTimeout(timer)
            resolve(Object.assign(() => child.kill("SIGTERM"), { pid: child.pid ?? 0 }))
          }
        },
        () => undefined
      )
    }, 500)
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
  })

export const cannon = (options: autocannon.Options) =>
  new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(options, (error, result) => (error ? reject(error) : resolve(result)))
  )

export const json = async (url: string, init: RequestInit) => {
  const response = await fetch(url, init)
  return (await response.json()) as Record<string, unknown>
}

/**
 * A signed-up tenant with `policies` enabled content policies (phrases no
 * reply contains; every third denies, the rest defer) and a runtime key:
 * the user's and the key's headers, and the ids an event names.
 */
export const benchTenant = async (base: string, policies: number) => {
  const password = createHash("sha256").update("bench").digest("hex")
  const session = await json(`${base}/v1/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: `bench-${Date.now()}`, password })
  })
  const auth = { authorization: `Bearer ${String(session["jwt"])}` }
  const environments = await json(`${base}/v1/environments`, { headers: auth })
  const environmentId = (environments["environments"] as Array<{ id: string }>)[0]!.id
  const key = await json(`${base}/v1/api-keys`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench" })
  })
  const workspaces = await json(`${base}/v1/team/my-workspaces`, {
    headers: { ...auth, "x-service-user-id": String(session["user_id"]) }
  })
  const workspaceId = (workspaces["workspaces"] as Array<{ id: string }>)[0]!.id
  for (let i = 0; i < policies; i++) {
    await fetch(`${base}/v1/policies`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/yaml" },
      body: phrasePolicy(i, i % 3 === 0 ? "deny" : "defer")
    })
  }
  for (const agentId of BENCH_AGENTS) await registerBenchAgent(base, auth, agentId)
  const keyHeaders = { authorization: `Bearer ${String(key["plaintext_key"])}`, "content-type": "application/json" }
  return { userHeaders: auth, keyHeaders, workspaceId, environmentId }
}

/** `POST /v1/policies/packs/{pack}/install`, enabled: the guard pack's answer. */
export const installPack = (base: string, auth: Record<string, string>, pack: string) =>
  json(`${base}/v1/policies/packs/${pack}/install`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ enabled: true })
  })

/** The agents the benchmarks decide for: registered, as events and gateway routes need (a bare profile). */
export const BENCH_AGENTS = ["bench", "bench-bot"] as const

export const registerBenchAgent = (base: string, auth: Record<string, string>, agentId: string) =>
  json(`${base}/v1/agents`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/yaml" },
    body: `agent_id: ${agentId}\ndisplay_name: ${agentId}\nauthority: {}\nscope: {}\ntone:\n  target: neutral\n`
  })

/** The benchmark tenants' content policy `phrase-<i>`: `action` on "forbidden phrase <i>" (three digits). */
export const phrasePolicy = (i: number, action: "deny" | "defer") =>
  `id: phrase-${i}\ndescription: Never say phrase ${i}\nfamily: content\nseverity: high\naction: ${action}\nmatch:\n  type: literal\n  value: forbidden phrase ${String(i).padStart(3, "0")}\n  target: content\n`

/** A `benchTenant` and the `POST /v1/events` request an agent would send: what the decision benchmarks load the service with. */
export const decisionTenant = async (base: string, policies: number) => {
  const tenant = await benchTenant(base, policies)
  return {
    url: `${base}/v1/events`,
    method: "POST" as const,
    body: JSON.stringify({
      kind: "output.proposed",
      // A registered agent, as a fleet's agents are: an unregistered one adds a finding to every decision.
      principal: { agent_id: "bench", environment_id: tenant.environmentId, workspace_id: tenant.workspaceId },
      action: { operation: "reply", content: "Thanks for waiting: your order ships tomorrow and arrives by Friday." }
    }),
    headers: tenant.keyHeaders
  }
}

export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Waits (at least 2 s, at most 60 s) until the processes together used under
 * 5% of a core over the last second: a service's stream workers have digested
 * what the previous run produced.
 */
export const waitUntilIdle = async (pids: ReadonlyArray<number>) => {
  const total = () => pids.reduce((sum, pid) => sum + cpuOf(pid), 0)
  await pause(1_000)
  for (let waited = 0; waited < 60_000; waited += 1_000) {
    const before = total()
    await pause(1_000)
    if (total() - before < 50) return
  }
}

/** Starts the ceiling server in `mode` on its own port; answers its base URL and a stop function. */
export const startCeilingServer = (mode: string, databaseUrl: string, env: Record<string, string> = {}) =>
  new Promise<{ base: string; stop: () => Promise<void> }>((resolve, reject) => {
    const port = 40_000 + Math.floor(Math.random() * 10_000)
    const child = spawn("node", [...SERVICE_NODE_FLAGS, "--import", "tsx", "bench/ceiling-server.ts", mode], {
      env: { ...process.env, PORT: String(port), DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers, ...env },
      stdio: ["ignore", "pipe", "inherit"]
    })
    const timer = setTimeout(() => reject(new Error(`ceiling server ${mode} did not start`)), 60_000)
    child.stdout.on("data", (chunk: Buffer) => {
      if (!chunk.toString().includes("ready")) return
      clearTimeout(timer)
      resolve({
        base: `http://127.0.0.1:${port}`,
        stop: () => new Promise((done) => (child.kill("SIGTERM"), child.once("exit", () => done())))
      })
    })
  })
