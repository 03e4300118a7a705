/**
 * The platform layer every entry point stands on: configuration, the SQL
 * client (PostgreSQL or embedded PGlite) with migrations applied, the event
 * log (Kafka or the database log), the outbox and its relay.
 */
import { Effect, Layer } from "effect"
import { ChangeNotices } from "./ChangeNotices.js"
import { AppConfig, isKafkaEnabled } from "./Config.js"
import { SqlLive } from "./Database.js"
import { EventLogDatabaseLive } from "./EventLogDatabase.js"
import { EventLogKafkaLive } from "./EventLogKafka.js"
import { MigrationsLive } from "./Migrations.js"
import { Outbox, OutboxRelayLive } from "./Outbox.js"
import { Secrets } from "./Secrets.js"

export const EventLogLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => (isKafkaEnabled(config) ? EventLogKafkaLive : EventLogDatabaseLive))
)

/** SQL client with the schema migrated before anything else may use it. */
export const DatabaseLive = MigrationsLive.pipe(Layer.provideMerge(SqlLive))

/** Everything but the outbox relay (tests start and stop the relay on their own). */
export const PlatformCoreLive = Layer.mergeAll(
  Outbox.Default,
  EventLogLive,
  Secrets.Default,
  ChangeNotices.Default
).pipe(Layer.provideMerge(DatabaseLive), Layer.provideMerge(AppConfig.Default))

export const PlatformLive = OutboxRelayLive.pipe(Layer.provideMerge(PlatformCoreLive))
