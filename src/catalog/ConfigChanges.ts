/**
 * Catalog changes reach every process through the `config-changes` topic:
 * a write commits its rows and a change event in one transaction (outbox),
 * then drops the local snapshot at once; every other process (each with a
 * consumer group of its own) drops its snapshot of that workspace when the
 * event arrives.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schedule, Schema, Stream } from "effect"
import { setAuditActor } from "../audit/Chain.js"
import { keepRunning } from "../platform/Background.js"
import { EventLog } from "../platform/EventLog.js"
import { Outbox } from "../platform/Outbox.js"
import { transactionOf } from "../platform/Sql.js"
import { Topics } from "../platform/Topics.js"
import { CatalogSnapshot } from "./Snapshot.js"

export const ConfigChangeResource = Schema.Literal(
  "agents",
  "policies",
  "label_policies",
  "tool_metadata",
  "knowledge_sources",
  "settings"
)

/** Value of the `config-changes` topic (key: workspace id). */
export const ConfigChange = Schema.Struct({
  schema_version: Schema.Literal(1),
  workspace_id: Schema.String,
  resource: ConfigChangeResource,
  changed_at: Schema.String,
  /** The writing instance (process or thread), which dropped its own snapshot when the write committed. */
  origin: Schema.optional(Schema.String)
}).annotations({ identifier: "ConfigChange" })
export type ConfigChange = typeof ConfigChange.Type

const encodeChange = Schema.encodeSync(ConfigChange)
const decodeChange = Schema.decodeUnknownOption(Schema.parseJson(ConfigChange))

export class ConfigChanges extends Effect.Service<ConfigChanges>()("catalog/ConfigChanges", {
  effect: Effect.gen(function* () {
    const outbox = yield* Outbox
    const snapshot = yield* CatalogSnapshot
    const sql = yield* SqlClient.SqlClient
    const transaction = transactionOf(sql)
    // The audit triggers (docs/audit.md) record every row this transaction changes, under this caller and request.
    const attribute = Effect.provideService(setAuditActor, SqlClient.SqlClient, sql)

    /** Runs `write` and records the change (and its audit events) in one transaction, then drops the local snapshot. */
    const change = <A, E, R>(workspaceId: string, resource: ConfigChange["resource"], write: Effect.Effect<A, E, R>) =>
      transaction(
        Effect.tap(Effect.zipRight(attribute, write), () =>
          outbox.enqueue([
            {
              topic: Topics.configChanges,
              key: workspaceId,
              value: encodeChange({
                schema_version: 1,
                workspace_id: workspaceId,
                resource,
                changed_at: new Date().toISOString(),
                origin: snapshot.instance
              })
            }
          ])
        )
      ).pipe(
        Effect.tap(() => snapshot.invalidate(workspaceId)),
        Effect.withSpan("ConfigChanges.change", { attributes: { resource } })
      )

    return { change }
  })
}) {}

/** Drops this process's snapshot of a workspace whenever any process changes its catalog. */
export const ConfigChangeListenerLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const log = yield* EventLog
    const snapshot = yield* CatalogSnapshot
    const group = `config-cache-${snapshot.instance}`
    // The group is this process's alone (a new one at each start): it goes with the process. Registered before
    // the listener's fiber, so it runs after that fiber (and its subscription) has ended.
    yield* Effect.addFinalizer(() =>
      log.forget(group).pipe(
        Effect.catchAll((error) => Effect.logDebug("config-change group not removed", error)),
        Effect.timeout("5 seconds"),
        Effect.ignore
      )
    )
    const listen = log.subscribe({ group, topics: [Topics.configChanges], fromBeginning: false }).pipe(
      Stream.runForEach((delivery) =>
        Option.match(decodeChange(delivery.value), {
          onNone: () => Effect.logWarning("undecodable config-change event skipped", { event_id: delivery.eventId }),
          // Our own writes dropped the snapshot when they committed; dropping it again would only force a reload.
          onSome: (change) =>
            change.origin === snapshot.instance ? Effect.void : snapshot.invalidate(change.workspace_id)
        }).pipe(Effect.zipRight(delivery.ack))
      )
    )
    yield* Effect.forkScoped(keepRunning("config-change listener", listen, Schedule.spaced("1 second")))
  })
)
