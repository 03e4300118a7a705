/**
 * The event backbone as one service: `publish` appends records, `subscribe`
 * reads them as a Stream for a consumer group with explicit acknowledgement.
 * Two implementations: Kafka (EventLogKafka) and the embedded database log
 * (EventLogDatabase). Consumers that need effect-once semantics use
 * `Consumer.consumeOnce`, which dedupes by event id in the database.
 */
import { Context, Data, Effect, Stream } from "effect"

/** An event to append. `value` is the JSON text of a schema-versioned value. */
export interface OutgoingEvent {
  readonly eventId: string
  readonly topic: string
  readonly key: string
  readonly value: string
  readonly headers?: Readonly<Record<string, string>>
}

/**
 * The log instance a delivery was read from. Offsets mean something only
 * within one: consumers key their stored positions by it, so a switch of log
 * (database log to Kafka, another KAFKA_TOPIC_PREFIX, a rebuilt cluster) never
 * applies old positions to new offsets.
 */
export interface LogSource {
  readonly kind: "kafka" | "database"
  /** The Kafka cluster id, or the database log's id (`event_log_identity`). */
  readonly logId: string
  /** The topic's name in that log (with KAFKA_TOPIC_PREFIX for Kafka). */
  readonly physicalTopic: string
}

/** An event read by a subscription. */
export interface Delivery extends OutgoingEvent {
  readonly source: LogSource
  /** The offset the partition's next record would get, as of the fetch (Kafka's high watermark). */
  readonly logEnd: string
  readonly partition: number
  /** Position in its topic partition, as a decimal string (Kafka offsets are 64-bit). */
  readonly offset: string
  readonly timestamp: Date
  /**
   * Acknowledges this delivery and every earlier one of the same partition:
   * the group will not see them again after a restart. Ack in order.
   */
  readonly ack: Effect.Effect<void, EventLogError>
  /**
   * Stops fetching this delivery's partition (the database log: its topic) until `resume`; what was fetched
   * already still comes. A consumer that cannot take more of one partition yet holds back that one alone.
   */
  readonly pause: Effect.Effect<void>
  /** Fetches this delivery's partition again after `pause`, from where its deliveries stopped. */
  readonly resume: Effect.Effect<void>
}

export interface SubscribeOptions {
  readonly group: string
  readonly topics: ReadonlyArray<string>
  /** Where a group with no stored position starts; default the beginning. */
  readonly fromBeginning?: boolean
}

export class EventLogError extends Data.TaggedError("EventLogError")<{
  readonly operation: string
  readonly cause: unknown
  /** The log refuses the records as they are (e.g. one is larger than Kafka accepts): retrying never succeeds. */
  readonly refused?: boolean
}> {
  override get message() {
    return `event log ${this.operation} failed: ${this.cause instanceof Error ? this.cause.message : String(this.cause)}`
  }
}

export class EventLog extends Context.Tag("platform/EventLog")<
  EventLog,
  {
    readonly kind: "kafka" | "database"
    readonly publish: (events: ReadonlyArray<OutgoingEvent>) => Effect.Effect<void, EventLogError>
    readonly subscribe: (options: SubscribeOptions) => Stream.Stream<Delivery, EventLogError>
    /**
     * Drops a consumer group that will never be read again (one of a process's own) with its stored positions,
     * once its subscriptions have ended: otherwise the database log keeps every row it has not read, and Kafka
     * keeps the group.
     */
    readonly forget: (group: string) => Effect.Effect<void, EventLogError>
    /** Succeeds when the log answers; used by readiness. */
    readonly ping: Effect.Effect<void, EventLogError>
  }
>() {}
