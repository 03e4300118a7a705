/**
 * Brings up the real infrastructure the suites need and tells them where it
 * is: PostgreSQL (started with pg_ctlcluster if it is down) and a local Kafka
 * broker (scripts/kafka-local.sh). A suite that cannot reach them fails; it
 * never skips.
 */
import { execFileSync } from "node:child_process"
import { readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import pg from "pg"
import type { TestProject } from "vitest/node"

const root = fileURLToPath(new URL("../../", import.meta.url))
const adminUrl = process.env["TEST_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const kafkaBrokers = process.env["TEST_KAFKA_BROKERS"] ?? "127.0.0.1:9092"

const postgresAnswers = async () => {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 })
  try {
    await client.connect()
    await client.query("select 1")
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => undefined)
  }
}

const ensurePostgres = async () => {
  if (await postgresAnswers()) return
  const [version] = readdirSync("/etc/postgresql")
  execFileSync("pg_ctlcluster", ["--skip-systemctl-redirect", version!, "main", "start"], { stdio: "inherit" })
  for (let attempt = 0; attempt < 30; attempt++) {
    if (await postgresAnswers()) return
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  throw new Error(`PostgreSQL does not answer at ${adminUrl}`)
}

export default async function setup(project: TestProject) {
  await ensurePostgres()
  if (process.env["TEST_KAFKA_BROKERS"] === undefined) {
    execFileSync("bash", [`${root}scripts/kafka-local.sh`, "start"], { stdio: "inherit" })
  }
  project.provide("postgresAdminUrl", adminUrl)
  project.provide("kafkaBrokers", kafkaBrokers)
}

declare module "vitest" {
  export interface ProvidedContext {
    postgresAdminUrl: string
    kafkaBrokers: string
  }
}
