/**
 * Start-up failures a person can fix, as `npm start` shows them: the real
 * all-in-one service in a child process with its port taken, PostgreSQL
 * unreachable or Kafka unreachable exits 1 and writes one plain sentence
 * saying what to do on stderr, with no stack.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:net"
import { runRefusedChildService } from "./child-service.js"

/** A loopback port held by another listener until the scope closes. */
const heldPort = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ readonly port: number; readonly close: () => void }>((resolve) => {
        const server = createServer()
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          resolve({
            port: typeof address === "object" && address !== null ? address.port : 0,
            close: () => server.close()
          })
        })
      })
  ),
  (held) => Effect.sync(held.close)
)

/** Checks the refusal: exit code 1 and stderr one line matching `sentence`, no stack frame anywhere on it. */
const expectSentence = (refused: { readonly code: number | string; readonly stderr: string }, sentence: RegExp) => {
  expect(refused.code, refused.stderr).toBe(1)
  const lines = refused.stderr.trim().split("\n")
  expect(lines, refused.stderr).toHaveLength(1)
  expect(lines[0]).toMatch(sentence)
  expect(refused.stderr).not.toMatch(/\n\s+at /)
}

describe("start-up failures", () => {
  it.scoped(
    "a port in use is one sentence naming the port and PORT",
    () =>
      Effect.gen(function* () {
        const held = yield* heldPort
        const refused = yield* runRefusedChildService({ PORT: String(held.port), STREAM_WORKER_THREAD: "false" })
        expectSentence(
          refused,
          new RegExp(`^Port ${held.port} on 127\\.0\\.0\\.1 is already in use: .*PORT set to a free port\\.$`)
        )
      }),
    120_000
  )

  it.scoped(
    "an unreachable database is one sentence naming DATABASE_URL",
    () =>
      Effect.gen(function* () {
        const refused = yield* runRefusedChildService({ DATABASE_URL: "postgres://postgres@127.0.0.1:1/nowhere" })
        expectSentence(
          refused,
          /^PostgreSQL cannot be reached at DATABASE_URL \(connect ECONNREFUSED 127\.0\.0\.1:1\): start PostgreSQL or fix DATABASE_URL/
        )
      }),
    120_000
  )

  it.scoped(
    "an unreachable Kafka is one sentence naming KAFKA_BROKERS",
    () =>
      Effect.gen(function* () {
        // kafkajs logs each retry on stdout (JSON lines); stderr holds only the sentence.
        const refused = yield* runRefusedChildService({ KAFKA_BROKERS: "127.0.0.1:1", STREAM_WORKER_THREAD: "false" })
        expectSentence(refused, /^Kafka cannot be reached at KAFKA_BROKERS \(.*ECONNREFUSED.*\): start the broker/)
      }),
    120_000
  )
})
