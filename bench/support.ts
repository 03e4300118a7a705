/**
 * Pieces every benchmark shares: the PostgreSQL admin connection, the
 * all-in-one service as a child process on Kafka + PostgreSQL, autocannon
 * as a promise, and small JSON fetch and percentile helpers.
 */
import autocannon from "autocannon"
import { spawn } from "node:child_process"
import pg from "pg"

export const adminUrl = process.env["BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
export const brokers = process.env["BENCH_KAFKA_BROKERS"] ?? "127.0.0.1:9092"

/** Runs one statement on the admin database (create/drop the benchmark's database). */
export const admin = async (text: string) => {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  await client.query(text).finally(() => client.end())
}

/**
 * Starts `services/all-in-one` over `databaseUrl` on `port` (fresh topic
 * prefix, LOG_LEVEL warn) and answers a function that stops it, once
 * /readyz answers 200. BENCH_CPU_PROFILE=<dir> writes a V8 CPU profile of
 * the service there (for finding hot spots).
 */
export const startService = (
  databaseUrl: string,
  port: number,
  env: Record<string, string> = {},
  service: "all-in-one" | "api" | "stream-worker" = "all-in-one"
) =>
  new Promise<() => void>((resolve, reject) => {
    const profile = process.env["BENCH_CPU_PROFILE"]
    const nodeArgs = profile === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profile}`]
    const child = spawn("node", [...nodeArgs, "--import", "tsx", `services/${service}/main.ts`], {
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
    })
    let output = ""
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${output}`)), 90_000)
    const poll = setInterval(() => {
      fetch(`http://127.0.0.1:${port}/readyz`).then(
        (response) => {
          if (response.ok) {
            clearInterval(poll)
            clearTimeout(timer)
            resolve(() => child.kill("SIGTERM"))
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
