/**
 * The real all-in-one service (`services/all-in-one/main.ts`, as `npm start`
 * runs it) in a child process over a fresh database and Kafka topic prefix:
 * for what only a process shows (its JSON log lines, its reaction to SIGTERM).
 */
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { inject } from "vitest"
import { CHEAP_ACCOUNTS, freshDatabase, uniqueName } from "../support/TestPlatform.js"

const root = new URL("../../", import.meta.url).pathname

export interface ChildService {
  readonly child: ChildProcess
  readonly baseUrl: string
  readonly databaseUrl: string
  readonly topicPrefix: string
  /** Everything written to stdout and stderr so far. */
  readonly output: () => string
  /** The JSON log lines so far, parsed. */
  readonly logLines: () => ReadonlyArray<Record<string, unknown>>
  /** Resolves with the exit code (or signal) once the process has exited. */
  readonly exited: Promise<number | string>
}

const spawnService = (databaseUrl: string, topicPrefix: string, env: Record<string, string>) =>
  spawn(process.execPath, ["--import", "tsx", "services/all-in-one/main.ts"], {
    cwd: root,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "/tmp",
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: inject("kafkaBrokers"),
      KAFKA_TOPIC_PREFIX: topicPrefix,
      KAFKA_PARTITIONS: "3",
      DATA_DIR: `/tmp/${uniqueName("guardrail-child")}`,
      HOST: "127.0.0.1",
      // The OS picks the port as the service binds it (no other process can take it in between); the
      // service announces its URL.
      PORT: "0",
      LOG_LEVEL: "info",
      POLL_INTERVAL_MS: "50",
      ...CHEAP_ACCOUNTS,
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })

/**
 * Starts the service expecting it to refuse to start; resolves with its exit
 * code and output. A service that starts instead (prints its URL) is killed
 * and the returned code is "started".
 */
export const runRefusedChildService = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const databaseUrl = yield* freshDatabase
    return yield* Effect.promise(
      () =>
        new Promise<{ readonly code: number | string; readonly output: string; readonly stderr: string }>((resolve) => {
          const child = spawnService(databaseUrl, `${uniqueName("refused")}.`, env)
          let output = ""
          let stderr = ""
          let started = false
          const onData = (chunk: Buffer) => {
            output += chunk.toString()
            if (!started && output.includes("Guardrail service listening")) {
              started = true
              child.kill("SIGKILL")
            }
          }
          child.stdout.on("data", onData)
          child.stderr.on("data", onData)
          child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
          child.on("close", (code, signal) =>
            resolve({ code: started ? "started" : (code ?? signal ?? "unknown"), output, stderr })
          )
        })
    )
  })

/** Starts the service; resolves once it logs its URL. Killed (SIGKILL) with the scope if still running. */
export const startChildService = (env: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const databaseUrl = yield* freshDatabase
    const topicPrefix = `${uniqueName("child")}.`
    return yield* Effect.acquireRelease(
      Effect.promise(
        () =>
          new Promise<ChildService>((resolve, reject) => {
            const child = spawnService(databaseUrl, topicPrefix, env)
            let output = ""
            const exited = new Promise<number | string>((done) =>
              child.on("exit", (code, signal) => done(code ?? signal ?? "unknown"))
            )
            const timer = setTimeout(
              () => reject(new Error(`the service printed no URL within 90 s:\n${output}`)),
              90_000
            )
            const onData = (chunk: Buffer) => {
              output += chunk.toString()
              const url = /Guardrail service listening: API (http:\/\/\S+)/.exec(output)
              if (url !== null) {
                clearTimeout(timer)
                resolve({
                  child,
                  baseUrl: url[1]!,
                  databaseUrl,
                  topicPrefix,
                  output: () => output,
                  logLines: () =>
                    output
                      .split("\n")
                      .filter((line) => line.startsWith("{"))
                      .flatMap((line) => {
                        try {
                          return [JSON.parse(line) as Record<string, unknown>]
                        } catch {
                          return []
                        }
                      }),
                  exited
                })
              }
            }
            child.stdout.on("data", onData)
            child.stderr.on("data", onData)
            void exited.then((code) => reject(new Error(`the service exited with ${code}:\n${output}`)))
          })
      ),
      (service) =>
        Effect.promise(async () => {
          if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill("SIGKILL")
          await service.exited
        })
    )
  })
