/**
 * What a newcomer gets from `npm start` with nothing configured: the
 * all-in-one service on embedded PGlite and the database event log, its URL
 * and /docs printed, state kept under DATA_DIR across restarts.
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const root = new URL("../../", import.meta.url).pathname

interface Started {
  readonly child: ChildProcess
  readonly output: () => string
  readonly baseUrl: string
}

/**
 * Runs `npm start` in its own process group on a port the OS picks (PORT=0: no other process can
 * take it between choosing and binding); resolves once it prints its URL.
 */
const npmStart = (dataDir: string) =>
  new Promise<Started>((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1" }
    delete env["DATABASE_URL"]
    delete env["KAFKA_BROKERS"]
    const child = spawn("npm", ["start"], { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const timer = setTimeout(() => reject(new Error(`npm start printed no URL within 60 s:\n${output}`)), 60_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const announced = /Guardrail service listening: API (http:\/\/127\.0\.0\.1:[1-9][0-9]*) {2}docs \1\/docs/.exec(
        output
      )
      if (announced !== null) {
        clearTimeout(timer)
        resolve({ child, output: () => output, baseUrl: announced[1]! })
      }
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", onData)
    child.on("exit", (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)))
  })

/** Sends SIGTERM to the process group and waits until all of it has exited. */
const stop = (started: Started) =>
  new Promise<void>((resolve) => {
    started.child.removeAllListeners("exit")
    // "close" waits for every process of the group to release stdout, not just npm.
    started.child.on("close", () => resolve())
    process.kill(-started.child.pid!, "SIGTERM")
  })

/** Every folder and file under `directory` (itself included) whose mode is not owner-only (0700 / 0600). */
const notOwnerOnly = (directory: string): Array<string> => {
  const own =
    (statSync(directory).mode & 0o777) === 0o700
      ? []
      : [`${directory} ${(statSync(directory).mode & 0o777).toString(8)}`]
  return readdirSync(directory, { withFileTypes: true }).reduce((found, entry) => {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) return [...found, ...notOwnerOnly(path)]
    const mode = statSync(path).mode & 0o777
    return entry.isFile() && mode !== 0o600 ? [...found, `${path} ${mode.toString(8)}`] : found
  }, own)
}

const getJson = async (url: string) => {
  const response = await fetch(url)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

describe("npm start with nothing configured", () => {
  it("serves the API on embedded PGlite with the database event log, and keeps its data across restarts", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "guardrail-embedded-"))
    try {
      const first = await npmStart(dataDir)
      expect(await getJson(`${first.baseUrl}/healthz`)).toEqual({ status: 200, body: { status: "ok" } })
      const ready = await getJson(`${first.baseUrl}/readyz`)
      expect(ready.status).toBe(200)
      expect(ready.body["checks"]).toEqual({ database: "ok", event_log: "database" })
      const openapi = await getJson(`${first.baseUrl}/openapi.json`)
      expect(Object.keys(openapi.body["paths"] as object)).toContain("/v1/events")
      expect((await fetch(`${first.baseUrl}/docs`)).status).toBe(200)

      // Logs are JSON lines with level, request id, route, status and duration.
      const accessLine = first
        .output()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => line["route"] === "/healthz" && line["status"] === 200)
      expect(accessLine).toMatchObject({ level: "info", method: "GET" })
      expect(typeof accessLine?.["request_id"]).toBe("string")
      expect(typeof accessLine?.["duration_ms"]).toBe("number")

      const secretFile = join(dataDir, "secrets", "jwt-secret")
      expect(statSync(secretFile).mode & 0o777).toBe(0o600)
      // The database and the secrets are readable by the service's user only.
      expect(notOwnerOnly(join(dataDir, "secrets"))).toEqual([])
      expect(notOwnerOnly(join(dataDir, "pglite"))).toEqual([])
      const secret = readFileSync(secretFile, "utf8")
      await stop(first)
      // Shutdown ran the finalizers: the service logged its last line.
      expect(first.output()).toContain("all-in-one stopped")

      expect(existsSync(join(dataDir, "pglite"))).toBe(true)
      expect(notOwnerOnly(join(dataDir, "pglite"))).toEqual([])
      const second = await npmStart(dataDir)
      expect(second.output()).not.toContain("migrations applied")
      expect((await getJson(`${second.baseUrl}/readyz`)).status).toBe(200)
      expect(readFileSync(secretFile, "utf8")).toBe(secret)
      await stop(second)
      expect(second.output()).toContain("all-in-one stopped")
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 150_000)
})
