/**
 * The stream worker on real Kafka and PostgreSQL:
 * - a worker process killed with SIGKILL mid-stream and started again ends
 *   with aggregate totals equal to the events produced (no loss, no double
 *   count), duplicates published by the relay included;
 * - two members of one consumer group split the partitions: disjoint sets
 *   that together cover every partition, each event applied once; and the
 *   same with two real stream-worker processes, as the broker reports them.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { fileURLToPath } from "node:url"
import { AssignerProtocol, Kafka, logLevel } from "kafkajs"
import { ANALYTICS_GROUP } from "../../src/analytics/Ingest.js"
import { consumeStream } from "../../src/platform/Consumer.js"
import { EventLog, type OutgoingEvent } from "../../src/platform/EventLog.js"
import { EventLogKafkaLive } from "../../src/platform/EventLogKafka.js"
import { PlatformCoreLive } from "../../src/platform/Platform.js"
import { Topics } from "../../src/platform/Topics.js"
import { eventually } from "../support/Eventually.js"
import { configLayer, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

const root = fileURLToPath(new URL("../../", import.meta.url))
const WORKSPACES = 6

/** The platform over a fresh database and fresh topics; also answers the settings (for child processes). */
const platform = Effect.gen(function* () {
  const url = yield* freshDatabase
  const settings = settingsFor("kafka", url, { KAFKA_TOPIC_PREFIX: `${uniqueName("t")}.`, KAFKA_PARTITIONS: "3" })
  const context = yield* Layer.build(PlatformCoreLive.pipe(Layer.provide(configLayer(settings))))
  return { settings, context }
})

const decision = (n: number, eventId = randomUUID()): OutgoingEvent => {
  const workspace = `ws_crash_${n % WORKSPACES}`
  return {
    eventId,
    topic: Topics.decisions,
    key: workspace,
    value: JSON.stringify({
      schema_version: 1,
      trace_id: `trc_${n}`,
      workspace_id: workspace,
      agent_id: `agent-${n % 3}`,
      environment_id: "env_1",
      run_id: null,
      session_id: null,
      effect: n % 4 === 0 ? "deny" : "permit",
      status: "decided",
      domain: "content",
      policy_ids: [],
      latency_ms: n % 50,
      decided_at: new Date().toISOString()
    })
  }
}

const startWorker = (settings: Record<string, string>) =>
  Effect.sync(() =>
    spawn(process.execPath, ["--import", "tsx", "services/stream-worker/main.ts"], {
      cwd: root,
      env: { ...process.env, ...settings, LOG_LEVEL: "error" },
      stdio: ["ignore", "ignore", "inherit"]
    })
  )

const kill = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    child.kill("SIGKILL")
  })

describe("stream worker", () => {
  it.live(
    "SIGKILL mid-stream, restart: aggregate totals equal the events produced, exactly",
    () =>
      Effect.gen(function* () {
        const { settings, context } = yield* platform
        const sql = Context.get(context, SqlClient.SqlClient)
        const log = Context.get(context, EventLog)
        const N = 30_000
        const events = Array.from({ length: N }, (_, n) => decision(n))
        for (let start = 0; start < N; start += 2_000) yield* log.publish(events.slice(start, start + 2_000))
        // The relay may publish an event twice: the same ids again, at later offsets.
        yield* log.publish(events.slice(0, 300))
        const counted = (granularity: string) =>
          Effect.map(
            sql<{ total: string }>`select coalesce(sum(value), 0)::text as total from analytics_buckets
                                   where series = 'decisions' and granularity = ${granularity}`,
            (rows) => Number(rows[0]!.total)
          )

        const kills: Array<number> = []
        for (let life = 0; life < 2; life++) {
          const worker = yield* Effect.acquireRelease(startWorker(settings), kill)
          const before = yield* counted("day")
          // Kill it once it has made progress, well before the end.
          const progress = yield* eventually(
            Effect.flatMap(counted("day"), (total) =>
              total > before ? Effect.succeed(total) : Effect.fail(`no progress yet (${total})`)
            ),
            "90 seconds"
          )
          yield* kill(worker)
          const atKill = yield* counted("day")
          expect(atKill, `killed at ${progress}`).toBeLessThan(N)
          kills.push(atKill)
        }
        expect(kills[1]!).toBeGreaterThan(kills[0]!)

        yield* Effect.acquireRelease(startWorker(settings), kill)
        yield* eventually(
          Effect.flatMap(counted("day"), (total) => (total >= N ? Effect.succeed(total) : Effect.fail(total))),
          "120 seconds"
        )
        yield* Effect.sleep("2 seconds")
        expect(yield* counted("day")).toBe(N)
        expect(yield* counted("hour")).toBe(N)
        expect(yield* counted("minute")).toBe(N)
        const denied = yield* sql<{ total: string }>`
          select sum(value)::text as total from analytics_buckets
          where series = 'decisions' and granularity = 'day' and dims->>'effect' = 'deny'`
        expect(Number(denied[0]!.total)).toBe(N / 4)
        // Every sketch holds one count per event.
        const sketched = yield* sql<{ total: string }>`
          select sum(c)::text as total from analytics_buckets, unnest(sketch) c
          where series = 'decisions' and granularity = 'day'`
        expect(Number(sketched[0]!.total)).toBe(N)
      }).pipe(Effect.scoped),
    300_000
  )

  it.live(
    "two members of a group split the partitions: disjoint, complete, each event applied once",
    () =>
      Effect.gen(function* () {
        const { context } = yield* platform
        const sql = Context.get(context, SqlClient.SqlClient)
        const log = Context.get(context, EventLog)
        const table = uniqueName("seen")
        yield* sql.unsafe(
          `create table ${table} (seq bigserial primary key, member text not null, partition int not null, event_id uuid not null)`
        )
        const group = uniqueName("g")
        // Each member has its own Kafka client, as a separate process would.
        const member = (name: string) =>
          consumeStream({
            group,
            topics: [Topics.runEvents],
            apply: (batch) =>
              sql.unsafe(
                `insert into ${table} (member, partition, event_id) select * from unnest($1::text[], $2::int[], $3::uuid[])`,
                [batch.map(() => name), batch.map((delivery) => delivery.partition), batch.map((delivery) => delivery.eventId)]
              )
          }).pipe(Effect.provide(EventLogKafkaLive), Effect.provide(context), Effect.forkScoped)
        yield* member("a")
        yield* member("b")

        const publish = (count: number, tag: string) =>
          log.publish(
            Array.from({ length: count }, (_, i) => ({
              eventId: randomUUID(),
              topic: Topics.runEvents,
              key: `${tag}-${i}`,
              value: JSON.stringify({ schema_version: 1, i })
            }))
          )
        const members = sql<{ member: string }>`select distinct member from ${sql(table)}`
        // Until both have joined and received something, the group is still rebalancing.
        yield* eventually(
          Effect.gen(function* () {
            yield* publish(30, uniqueName("warm"))
            yield* Effect.sleep("300 millis")
            const seen = yield* members
            if (seen.length < 2) return yield* Effect.fail(`members so far: ${seen.map((row) => row.member)}`)
          }),
          "60 seconds"
        )
        yield* Effect.sleep("2 seconds")
        const [{ mark }] = yield* sql<{ mark: string }>`select coalesce(max(seq), 0)::text as mark from ${sql(table)}`

        const N = 900
        yield* publish(N, "split")
        const rows = yield* eventually(
          Effect.flatMap(
            sql<{ member: string; partition: number; event_id: string }>`
              select member, partition, event_id::text as event_id from ${sql(table)} where seq > ${mark}`,
            (found) => (found.length >= N ? Effect.succeed(found) : Effect.fail(found.length))
          ),
          "60 seconds"
        )
        yield* Effect.sleep("1 second")
        const settled = yield* sql<{ n: string }>`select count(*)::text as n from ${sql(table)} where seq > ${mark}`
        expect(Number(settled[0]!.n)).toBe(N)
        expect(new Set(rows.map((row) => row.event_id)).size).toBe(N)
        const partitionsOf = (name: string) => new Set(rows.filter((row) => row.member === name).map((row) => row.partition))
        const a = partitionsOf("a")
        const b = partitionsOf("b")
        expect(a.size).toBeGreaterThan(0)
        expect(b.size).toBeGreaterThan(0)
        expect([...a].filter((partition) => b.has(partition))).toEqual([])
        expect([...a, ...b].sort()).toEqual([0, 1, 2])
      }).pipe(Effect.scoped),
    180_000
  )

  it.live(
    "two stream-worker processes split the analytics group's partitions and count every event once",
    () =>
      Effect.gen(function* () {
        const { settings, context } = yield* platform
        const sql = Context.get(context, SqlClient.SqlClient)
        const log = Context.get(context, EventLog)
        const prefix = settings["KAFKA_TOPIC_PREFIX"]!
        const admin = new Kafka({ clientId: "split-test", brokers: [settings["KAFKA_BROKERS"]!], logLevel: logLevel.NOTHING }).admin()
        yield* Effect.acquireRelease(Effect.promise(() => admin.connect()), () => Effect.promise(() => admin.disconnect()))
        yield* Effect.acquireRelease(startWorker(settings), kill)
        yield* Effect.acquireRelease(startWorker(settings), kill)

        // The group's members as the broker sees them: which partitions of `decisions` each owns.
        const ownership = Effect.promise(() => admin.describeGroups([`${prefix}${ANALYTICS_GROUP}`])).pipe(
          Effect.map(({ groups: [group] }) =>
            (group?.state === "Stable" ? group.members : []).map((member) => {
              const assignment = AssignerProtocol.MemberAssignment.decode(member.memberAssignment)
              return assignment?.assignment[`${prefix}${Topics.decisions}`] ?? []
            })
          )
        )
        const owned = yield* eventually(
          Effect.flatMap(ownership, (members) =>
            members.length === 2 && members.every((partitions) => partitions.length > 0)
              ? Effect.succeed(members)
              : Effect.fail(`members so far: ${JSON.stringify(members)}`)
          ),
          "90 seconds"
        )
        const [first, second] = owned as [Array<number>, Array<number>]
        expect(first.filter((partition) => second.includes(partition))).toEqual([])
        expect([...first, ...second].sort()).toEqual([0, 1, 2])

        const N = 3_000
        // Sixty workspaces (keys), so every partition gets events and both processes work.
        const events = Array.from({ length: N }, (_, n) => {
          const event = decision(n)
          const workspace = `ws_split_${n % 60}`
          const value = { ...(JSON.parse(event.value as string) as Record<string, unknown>), workspace_id: workspace }
          return { ...event, key: workspace, value: JSON.stringify(value) }
        })
        yield* log.publish(events)
        const counted = Effect.map(
          sql<{ total: string }>`select coalesce(sum(value), 0)::text as total from analytics_buckets
                                 where series = 'decisions' and granularity = 'day'`,
          (rows) => Number(rows[0]!.total)
        )
        yield* eventually(
          Effect.flatMap(counted, (total) => (total >= N ? Effect.succeed(total) : Effect.fail(total))),
          "90 seconds"
        )
        yield* Effect.sleep("1 second")
        expect(yield* counted).toBe(N)
        // Every partition's position was committed with its aggregates, by the process that owns it.
        const positions = yield* sql<{ partition: number }>`
          select partition from consumer_partition_positions where topic = ${Topics.decisions} and group_id = ${ANALYTICS_GROUP}`
        expect(positions.map((row) => row.partition).sort()).toEqual([0, 1, 2])
      }).pipe(Effect.scoped),
    240_000
  )
})

