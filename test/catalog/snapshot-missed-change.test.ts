/**
 * A process that never hears of a catalog change made elsewhere. It happens:
 * a process's config-change consumer starts at the topic's end as of its
 * group join, so a change another process publishes between this process's
 * start (when it already serves, loading snapshots) and that join is never
 * delivered to it (snapshot-across-processes.test.ts hits this under load).
 * Here the second process reads another topic prefix, so it hears nothing
 * at all. Before, its snapshot had no expiry: it enforced the old catalog
 * (a deleted policy, a missing deny) until the next change to that
 * workspace. A snapshot is now checked against the workspace's audit head
 * once per CATALOG_SNAPSHOT_REFRESH_SECONDS (60; 2 here) and reloaded when
 * it moved.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { CatalogLive } from "../../src/catalog/Http.js"
import { Policies } from "../../src/catalog/Policies.js"
import { CatalogSnapshot } from "../../src/catalog/Snapshot.js"
import { PlatformLive } from "../../src/platform/Platform.js"
import { eventually } from "../support/Eventually.js"
import { configLayer, freshDatabase, settingsFor, uniqueName } from "../support/TestPlatform.js"

const processOver = (settings: Record<string, string>) =>
  Layer.build(CatalogLive.pipe(Layer.provideMerge(PlatformLive.pipe(Layer.provide(configLayer(settings))))))

const policyYaml = (id: string) =>
  new TextEncoder().encode(
    `id: ${id}\ndescription: Never promise a refund\nfamily: content\nseverity: high\naction: deny\nmatch:\n  type: literal\n  value: full refund\n  target: content\n`
  )

describe("catalog snapshot and a change it never heard of", () => {
  it.live(
    "the snapshot is reloaded once a check finds the catalog changed",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        const first = yield* processOver(settingsFor("kafka", url))
        const second = yield* processOver(
          settingsFor("kafka", url, {
            DATA_DIR: `/tmp/${uniqueName("guardrail-data")}`,
            CATALOG_SNAPSHOT_REFRESH_SECONDS: "2"
          })
        )
        const workspaceId = uniqueName("ws")
        const sql = Context.get(first, SqlClient.SqlClient)
        yield* sql`insert into organizations (id, name) values (${workspaceId}, 'org')`
        yield* sql`insert into workspaces (id, organization_id, name, slug) values (${workspaceId}, ${workspaceId}, 'ws', 'ws')`
        const snapshot = Context.get(second, CatalogSnapshot)
        expect((yield* snapshot.get(workspaceId)).policies).toEqual([])

        const policyId = uniqueName("no-refund").replaceAll("_", "-")
        yield* Context.get(first, Policies).create(workspaceId, policyYaml(policyId), { kind: "system", id: "test" })
        const seen = yield* eventually(
          Effect.flatMap(snapshot.get(workspaceId), (now) =>
            now.policies.length === 1 ? Effect.succeed(now) : Effect.fail("stale")
          ),
          "30 seconds"
        )
        expect(seen.policies[0]!.id).toBe(policyId)
        // The synchronous hot paths' read never answers a stale snapshot either.
        expect(snapshot.peek(workspaceId)?.policies).toHaveLength(1)
      }).pipe(Effect.scoped),
    120_000
  )
})
