/**
 * `npm run tail` (scripts/tail.ts) against the real service: events published
 * through the API (decisions from POST /v1/events, run events) come out of
 * the tail as one JSON line each, with topic, partition, offset, key,
 * event_id, timestamp and the decoded value; `--workspace` keeps only that
 * workspace's messages; `--from-beginning` replays what is already there, in
 * order per key; SIGINT ends it with status 0 and leaves no consumer group
 * behind; a bad topic is a usage error. The same over the database event log
 * at DATABASE_URL; the embedded database (one connection, the service's)
 * is refused with a message saying what to set.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Kafka, logLevel } from "kafkajs"
import { AppConfig } from "../../src/platform/Config.js"
import { UUID } from "../support/Formats.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServer, testServerWithDatabase } from "../support/TestServer.js"
import { createAgent, propose, reply } from "../support/Events.js"

/** Each test starts tail processes (node + tsx, several seconds each on a busy machine). */
const TEST_TIMEOUT = 120_000

const root = fileURLToPath(new URL("../../", import.meta.url))
const AGENT = "support-bot"

interface TailLine {
  readonly topic: string
  readonly partition: number
  readonly offset: string
  readonly key: string
  readonly event_id: string | null
  readonly timestamp: string
  readonly value: Record<string, unknown>
  readonly schema_error?: string
}

interface Tail {
  readonly child: ChildProcess
  readonly lines: Array<TailLine>
  readonly stderr: () => string
  /** Resolves with the exit code once the process ended. */
  readonly exited: Promise<number | null>
}

/** Starts the tail as an async child process with only the settings given (never the test's own environment). */
const startTail = (args: ReadonlyArray<string>, settings: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync((): Tail => {
      const child = spawn(process.execPath, ["--import", "tsx", "scripts/tail.ts", ...args], {
        cwd: root,
        env: { LOG_LEVEL: "warn", ...settings },
        stdio: ["ignore", "pipe", "pipe"]
      })
      const lines: Array<TailLine> = []
      let pending = ""
      let errors = ""
      child.stdout!.on("data", (chunk: Buffer) => {
        pending += chunk.toString("utf8")
        const parts = pending.split("\n")
        pending = parts.pop()!
        for (const part of parts) if (part.trim() !== "") lines.push(JSON.parse(part) as TailLine)
      })
      child.stderr!.on("data", (chunk: Buffer) => (errors += chunk.toString("utf8")))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, lines, stderr: () => errors, exited }
    }),
    (tail) => Effect.sync(() => tail.child.kill("SIGKILL"))
  )

/** Waits until `check` holds (polling every 50 ms), failing with `describe()` after `timeout`. */
const waitUntil = (check: () => boolean, describe: () => string, timeout: Duration.DurationInput = "30 seconds") =>
  Effect.gen(function* () {
    const deadline = Date.now() + Duration.toMillis(Duration.decode(timeout))
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out: ${describe()}`))
      yield* Effect.sleep("50 millis")
    }
  })

const waitReady = (tail: Tail) =>
  waitUntil(
    () => tail.stderr().includes("tailing "),
    () => `tail never became ready; stderr: ${tail.stderr()}`
  )

const stop = (tail: Tail) =>
  Effect.gen(function* () {
    tail.child.kill("SIGINT")
    return yield* Effect.promise(() => tail.exited).pipe(
      Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error("tail did not stop on SIGINT") })
    )
  })

const expectLineShape = (line: TailLine, topic: string) => {
  expect(line.topic).toBe(topic)
  expect(Number.isInteger(line.partition) && line.partition >= 0).toBe(true)
  expect(line.offset).toMatch(/^\d+$/)
  expect(line.event_id).toMatch(UUID)
  expect(new Date(line.timestamp).toISOString()).toBe(line.timestamp)
  expect(line.value["schema_version"]).toBe(1)
  expect(line.schema_error).toBeUndefined()
}

const kafkaSettings = Effect.map(AppConfig, (config) => ({
  KAFKA_BROKERS: config.kafkaBrokers.join(","),
  KAFKA_TOPIC_PREFIX: config.kafkaTopicPrefix
}))

layer(testServer("kafka"), SERVER_OPTIONS)("npm run tail (Kafka)", (it) => {
  describe("decisions", () => {
    it.scoped(
      "prints each new decision of the chosen workspace as a JSON line, and only those",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const settings = yield* kafkaSettings
          const [mine, other] = yield* Effect.all([tenant(base), tenant(base)])
          yield* createAgent(base, mine, AGENT)
          yield* createAgent(base, other, AGENT)

          const filtered = yield* startTail(["decisions", "--workspace", mine.workspaceId], settings)
          const everything = yield* startTail(["decisions"], settings)
          yield* waitReady(filtered)
          yield* waitReady(everything)

          const theirs = yield* propose(base, other, AGENT, reply("Their order ships tomorrow."))
          const permit = yield* propose(base, mine, AGENT, reply("Your order ships tomorrow."))
          const deny = yield* propose(base, mine, AGENT, reply("I promise a full refund."))
          expect([permit.effect, deny.effect]).toEqual(["permit", "deny"])

          // The unfiltered tail sees all three, so the other workspace's decision has been published too.
          const traceIds = (tail: Tail) => tail.lines.map((line) => line.value["trace_id"])
          yield* waitUntil(
            () => [theirs, permit, deny].every((decision) => traceIds(everything).includes(decision.trace_id)),
            () => `unfiltered tail saw ${JSON.stringify(traceIds(everything))}; stderr ${everything.stderr()}`
          )
          yield* waitUntil(
            () => filtered.lines.length >= 2,
            () => `filtered tail saw ${JSON.stringify(filtered.lines)}`
          )
          yield* Effect.sleep("500 millis")
          expect(traceIds(filtered)).toEqual([permit.trace_id, deny.trace_id])
          for (const line of filtered.lines) {
            expectLineShape(line, "decisions")
            expect(line.key).toBe(mine.workspaceId)
            expect(line.value["workspace_id"]).toBe(mine.workspaceId)
          }
          expect(filtered.lines.map((line) => line.value["effect"])).toEqual(["permit", "deny"])
          expect(new Set(filtered.lines.map((line) => line.event_id)).size).toBe(2)

          expect(yield* stop(filtered)).toBe(0)
          expect(yield* stop(everything)).toBe(0)
        }),
      TEST_TIMEOUT
    )
  })

  describe("run events", () => {
    it.scoped(
      "--from-beginning replays a run's events in sequence order",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const settings = yield* kafkaSettings
          const owner = yield* tenant(base)
          const run = yield* owner.api.runs.createRun({ payload: { agent_id: AGENT, kind: "chat_session" } })
          for (const kind of ["user_turn", "agent_turn", "tool_call"] as const) {
            yield* owner.api.runs.appendRunEvent({ path: { id: run.id }, payload: { kind } })
          }

          const tail = yield* startTail(["run-events", "--from-beginning", "--workspace", owner.workspaceId], settings)
          yield* waitUntil(
            () => tail.lines.length >= 3,
            () => `tail saw ${JSON.stringify(tail.lines)}; stderr ${tail.stderr()}`
          )
          expect(
            tail.lines.map((line) => [line.key, line.value["run_id"], line.value["sequence"], line.value["kind"]])
          ).toEqual([
            [run.id, run.id, 1, "user_turn"],
            [run.id, run.id, 2, "agent_turn"],
            [run.id, run.id, 3, "tool_call"]
          ])
          for (const line of tail.lines) expectLineShape(line, "run-events")
          // One key, one partition: offsets increase.
          expect(new Set(tail.lines.map((line) => line.partition)).size).toBe(1)
          const offsets = tail.lines.map((line) => BigInt(line.offset))
          expect(offsets[0]! < offsets[1]! && offsets[1]! < offsets[2]!).toBe(true)
          expect(yield* stop(tail)).toBe(0)
        }),
      TEST_TIMEOUT
    )
  })

  describe("consumer groups", () => {
    it.scoped(
      "SIGINT ends the tail with status 0 and leaves no consumer group on the broker",
      () =>
        Effect.gen(function* () {
          const settings = yield* kafkaSettings
          const tail = yield* startTail(["config-changes", "--from-beginning"], settings)
          yield* waitReady(tail)
          const group = /group (\S+?)\)/.exec(tail.stderr())?.[1]
          expect(group, tail.stderr()).toMatch(/tail-/)
          expect(yield* stop(tail)).toBe(0)

          const admin = new Kafka({ brokers: settings.KAFKA_BROKERS.split(","), logLevel: logLevel.NOTHING }).admin()
          yield* Effect.acquireRelease(
            Effect.promise(() => admin.connect()),
            () => Effect.promise(() => admin.disconnect())
          )
          const { groups } = yield* Effect.promise(() => admin.listGroups())
          expect(groups.map((entry) => entry.groupId)).not.toContain(group)
        }),
      TEST_TIMEOUT
    )

    it.scoped(
      "an unknown topic is a usage error (status 2) naming the topics",
      () =>
        Effect.gen(function* () {
          const tail = yield* startTail(["no-such-topic"], yield* kafkaSettings)
          const code = yield* Effect.promise(() => tail.exited)
          expect(code).toBe(2)
          expect(tail.stderr()).toContain("unknown topic no-such-topic")
          expect(tail.stderr()).toContain("decisions, run-events, review-events")
          expect(tail.lines).toEqual([])
        }),
      TEST_TIMEOUT
    )
  })
})

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("npm run tail (database event log)", (it) => {
  it.scoped(
    "without Kafka or DATABASE_URL (the embedded database) it says what to set and exits with status 2",
    () =>
      Effect.gen(function* () {
        const tail = yield* startTail(["decisions"], { DATA_DIR: "/nonexistent-guardrail-tail" })
        expect(yield* Effect.promise(() => tail.exited)).toBe(2)
        expect(tail.stderr()).toContain("DATABASE_URL")
        expect(tail.lines).toEqual([])
      }),
    TEST_TIMEOUT
  )

  it.scoped(
    "reads the event_log table: new decisions of the workspace as JSON lines",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const databaseUrl = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, AGENT)
        const before = yield* propose(base, owner, AGENT, reply("Published before the tail started."))

        const settings = { DATABASE_URL: databaseUrl, POLL_INTERVAL_MS: "50" }
        const replay = yield* startTail(["decisions", "--from-beginning"], settings)
        // Once the replay printed it, the first decision is in the log: a tail started now begins after it.
        yield* waitUntil(
          () => replay.lines.length >= 1,
          () => `replay saw nothing; stderr ${replay.stderr()}`
        )
        const fresh = yield* startTail(["decisions", "--workspace", owner.workspaceId], settings)
        yield* waitReady(fresh)
        const after = yield* propose(base, owner, AGENT, reply("Your order ships tomorrow."))
        yield* waitUntil(
          () => fresh.lines.length >= 1 && replay.lines.length >= 2,
          () =>
            `tail saw ${JSON.stringify(fresh.lines)}, replay ${JSON.stringify(replay.lines)}; stderr ${fresh.stderr()}`
        )
        yield* Effect.sleep("300 millis")

        expect(fresh.lines.map((line) => line.value["trace_id"])).toEqual([after.trace_id])
        expect(replay.lines.map((line) => line.value["trace_id"])).toEqual([before.trace_id, after.trace_id])
        for (const line of [...fresh.lines, ...replay.lines]) {
          expectLineShape(line, "decisions")
          expect(line.partition).toBe(0)
          expect(line.key).toBe(owner.workspaceId)
        }
        expect(yield* stop(fresh)).toBe(0)
        expect(yield* stop(replay)).toBe(0)
      }),
    TEST_TIMEOUT
  )
})
