/**
 * Every process reads `config-changes` in a consumer group of its own
 * (`config-cache-<instance>`, a new one at each start). A process that stops
 * must not leave that group behind: on the database log its stored position
 * stayed in `consumer_positions` for good, so every later `config-changes`
 * row was kept by the retention task (it waits for every group that reads a
 * topic) and `guardrail_consumer_lag` showed the dead group's lag growing;
 * on Kafka the broker kept a group per start.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { Kafka, logLevel } from "kafkajs"
import { inject } from "vitest"
import { CatalogLive } from "../../src/catalog/Http.js"
import { Policies } from "../../src/catalog/Policies.js"
import { CatalogSnapshot } from "../../src/catalog/Snapshot.js"
import { pruneEventPlumbing } from "../../src/operations/EventPruning.js"
import { PlatformLive } from "../../src/platform/Platform.js"
import { queryDatabase } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { configLayer, type EventLogMode, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

const processOver = (settings: Record<string, string>) =>
  Layer.build(CatalogLive.pipe(Layer.provideMerge(PlatformLive.pipe(Layer.provide(configLayer(settings))))))

const policyYaml = (id: string) =>
  new TextEncoder().encode(
    `id: ${id}\ndescription: Never promise a refund\nfamily: content\nseverity: high\naction: deny\nmatch:\n  type: literal\n  value: full refund\n  target: content\n`
  )

const kafkaGroups = Effect.acquireUseRelease(
  Effect.promise(async () => {
    const admin = new Kafka({ brokers: [inject("kafkaBrokers")], logLevel: logLevel.NOTHING }).admin()
    await admin.connect()
    return admin
  }),
  (admin) => Effect.promise(async () => (await admin.listGroups()).groups.map((group) => group.groupId)),
  (admin) => Effect.promise(() => admin.disconnect())
)

const stoppedProcess = (mode: EventLogMode) =>
  it.live(
    `${mode}: a stopped process leaves no config-change group behind`,
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const prefix = `${uniqueName("t")}.`
        const settings = settingsFor(mode, url, { KAFKA_TOPIC_PREFIX: prefix })
        const first = yield* processOver(settings)
        const workspaceId = uniqueName("ws")
        const sql = Context.get(first, SqlClient.SqlClient)
        yield* sql`insert into organizations (id, name) values (${workspaceId}, 'org')`
        yield* sql`insert into workspaces (id, organization_id, name, slug) values (${workspaceId}, ${workspaceId}, 'ws', 'ws')`
        const policies = Context.get(first, Policies)
        const create = Effect.suspend(() =>
          policies.create(workspaceId, policyYaml(uniqueName("p").replaceAll("_", "-")), { kind: "system", id: "t" })
        )

        // A second process runs a while, reads a change (so its group has a position), and stops.
        const stopped = yield* Effect.scoped(
          Effect.gen(function* () {
            const second = yield* processOver({ ...settings, DATA_DIR: `/tmp/${uniqueName("guardrail-data")}` })
            const snapshot = Context.get(second, CatalogSnapshot)
            yield* snapshot.get(workspaceId)
            yield* create
            yield* eventually(
              Effect.flatMap(snapshot.get(workspaceId), (now) =>
                now.policies.length === 1 ? Effect.void : Effect.fail("not yet")
              ),
              "30 seconds"
            )
            return `config-cache-${snapshot.instance}`
          })
        )

        if (mode === "kafka") {
          expect(yield* kafkaGroups).not.toContain(prefix + stopped)
          return
        }
        const groups = yield* queryDatabase<{ group_id: string }>(
          url,
          "select group_id from consumer_positions where topic = 'config-changes'"
        )
        expect(groups.map((row) => row.group_id)).not.toContain(stopped)
        // And so the retention task can prune what every running process has read.
        yield* create
        yield* eventually(
          Effect.gen(function* () {
            yield* pruneEventPlumbing({ processedEventsHours: 168, eventLogHours: 0, batchSize: 100 }).pipe(
              Effect.provide(first)
            )
            const [left] = yield* queryDatabase<{ n: string }>(
              url,
              "select count(*)::text as n from event_log where topic = 'config-changes'"
            )
            return left!.n === "0" ? yield* Effect.void : yield* Effect.fail(left!.n)
          }),
          "30 seconds"
        )
      }).pipe(Effect.scoped),
    120_000
  )

describe("config-change groups of stopped processes", () => {
  stoppedProcess("database")
  stoppedProcess("kafka")
})
