/**
 * The hot-path snapshot across processes: two independently built service
 * stacks (each with its own caches and its own config-changes consumer) over
 * one database and one event log. A policy change made through one takes
 * effect in the other's snapshot.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { CatalogLive } from "../../src/catalog/Http.js"
import { Policies } from "../../src/catalog/Policies.js"
import { CatalogSnapshot } from "../../src/catalog/Snapshot.js"
import { PlatformLive } from "../../src/platform/Platform.js"
import { eventually } from "../support/Eventually.js"
import { configLayer, type EventLogMode, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

const processOver = (settings: Record<string, string>) =>
  Layer.build(CatalogLive.pipe(Layer.provideMerge(PlatformLive.pipe(Layer.provide(configLayer(settings))))))

const policyYaml = (id: string) =>
  new TextEncoder().encode(
    `id: ${id}\ndescription: Never promise a refund\nfamily: content\nseverity: high\naction: deny\nmatch:\n  type: literal\n  value: full refund\n  target: content\n`
  )

const crossProcess = (mode: EventLogMode) =>
  it.live(
    `${mode}: a policy created and disabled through one process changes the other's snapshot`,
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        // One set of settings (same database, same topic prefix), two processes.
        const settings = settingsFor(mode, url, { KAFKA_TOPIC_PREFIX: `${uniqueName("t")}.` })
        const first = yield* processOver(settings)
        const second = yield* processOver({ ...settings, DATA_DIR: `/tmp/${uniqueName("guardrail-data")}` })

        const workspaceId = uniqueName("ws")
        const sql = Context.get(first, SqlClient.SqlClient)
        yield* sql`insert into organizations (id, name) values (${workspaceId}, 'org')`
        yield* sql`insert into workspaces (id, organization_id, name, slug) values (${workspaceId}, ${workspaceId}, 'ws', 'ws')`
        const otherSnapshot = Context.get(second, CatalogSnapshot)
        expect((yield* otherSnapshot.get(workspaceId)).policies).toEqual([]) // cached in the second process

        const policyId = uniqueName("no-refund").replaceAll("_", "-")
        yield* Context.get(first, Policies).create(workspaceId, policyYaml(policyId), { kind: "system", id: "test" })
        const withPolicy = yield* eventually(
          Effect.flatMap(otherSnapshot.get(workspaceId), (snapshot) =>
            snapshot.policies.some((policy) => policy.id === policyId)
              ? Effect.succeed(snapshot)
              : Effect.fail("not yet")
          ),
          "30 seconds"
        )
        const compiled = withPolicy.policies.find((policy) => policy.id === policyId)!
        expect(compiled.match({ operation: "reply", content: "We offer a FULL REFUND today" })).toHaveLength(1)
        yield* Context.get(first, Policies).setEnabled(workspaceId, [policyId], false)
        yield* eventually(
          Effect.flatMap(otherSnapshot.get(workspaceId), (snapshot) =>
            snapshot.policies.length === 0 ? Effect.void : Effect.fail("still enabled")
          ),
          "30 seconds"
        )
      }).pipe(Effect.scoped),
    120_000
  )

describe("catalog snapshot across processes", () => {
  crossProcess("kafka")
  crossProcess("database")
})
