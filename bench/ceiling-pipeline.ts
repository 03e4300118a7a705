/**
 * The stream half of bench/ceiling.ts's `pipeline` mode, in its own process
 * (the service's stream worker has its own thread): the least any
 * implementation of issue 6 must do after an event is acknowledged, written
 * with plain `pg` and kafkajs and no framework.
 *  - Relay: moves committed outbox rows, in id order, to Kafka (acks all)
 *    and deletes them (the outbox is what makes an acknowledged event durable
 *    before it reaches Kafka).
 *  - Consumer: per partition batch, one transaction that advances the
 *    partition's stored position, inserts the event ids' dedupe records and
 *    upserts the aggregate rows (per workspace, series and dimension tuple,
 *    minute / hour / day buckets, a latency histogram for decisions), so a
 *    crash neither loses nor double-counts.
 * It does less than the service (no run counters, no budget meter, no
 * review or usage topics, no late-event bucket), so its figures are upper
 * bounds. Every second it prints a JSON line: events aggregated and
 * freshness (acknowledgement to aggregate commit) p50 / p99 / max so far.
 * Env: DATABASE_URL, KAFKA_BROKERS, CEILING_TOPIC_PREFIX.
 */
import { Kafka, logLevel } from "kafkajs"
import pg from "pg"

const prefix = process.env["CEILING_TOPIC_PREFIX"] ?? `ceiling-${Date.now()}-`
const TOPICS = [`${prefix}decisions`, `${prefix}run-events`]
const GROUP = "ceiling-analytics"
const BUCKETS = [60_000, 3_600_000, 86_400_000] as const
const BINS = 64

const SCHEMA = `
create table if not exists c_processed (group_id text not null, event_id uuid not null, primary key (group_id, event_id));
create table if not exists c_positions (group_id text not null, topic text not null, partition integer not null,
  next_offset bigint not null, primary key (group_id, topic, partition));
create table if not exists c_buckets (workspace_id text not null, series text not null, granularity bigint not null,
  bucket_start timestamptz not null, dims jsonb not null, value bigint not null, sketch bigint[],
  primary key (workspace_id, series, granularity, bucket_start, dims));`

/** An outbox value as the server writes it (`acked_at` is stamped just before the commit it waits for). */
interface Message {
  readonly event_id: string
  readonly workspace_id: string
  readonly series: "decisions" | "run_events"
  readonly dims: Record<string, string>
  readonly latency_ms?: number
  readonly acked_at: number
}

const pool = new pg.Pool({ connectionString: process.env["DATABASE_URL"], max: 4 })
const kafka = new Kafka({ brokers: (process.env["KAFKA_BROKERS"] ?? "127.0.0.1:9092").split(","), logLevel: logLevel.NOTHING })
/** Freshness counts by whole millisecond (the last slot holds everything slower). */
const freshness = new Uint32Array(60_001)
let aggregated = 0

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const relay = async () => {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  for (;;) {
    const { rows } = await pool.query<{ id: string; topic: string; key: string; value: string }>(
      "select id::text as id, topic, key, value from c_outbox order by id limit 500"
    )
    if (rows.length === 0) {
      await sleep(5)
      continue
    }
    const byTopic = new Map<string, Array<{ key: string; value: string }>>()
    for (const row of rows) {
      const messages = byTopic.get(`${prefix}${row.topic}`) ?? []
      messages.push({ key: row.key, value: row.value })
      byTopic.set(`${prefix}${row.topic}`, messages)
    }
    await producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) })
    await pool.query("delete from c_outbox where id = any($1::bigint[])", [rows.map((row) => row.id)])
  }
}

/** The aggregate rows of a batch: one per workspace, series, dimension tuple and bucket, summed. */
const rowsOf = (messages: ReadonlyArray<Message>) => {
  const rows = new Map<string, { workspace: string; series: string; granularity: number; start: number; dims: string; value: number; sketch: Array<number> | null }>()
  for (const message of messages) {
    const dims = JSON.stringify(Object.fromEntries(Object.entries(message.dims).sort(([a], [b]) => (a < b ? -1 : 1))))
    for (const granularity of BUCKETS) {
      const start = Math.floor(message.acked_at / granularity) * granularity
      const key = `${message.workspace_id}\u0000${message.series}\u0000${granularity}\u0000${start}\u0000${dims}`
      let row = rows.get(key)
      if (row === undefined) {
        row = { workspace: message.workspace_id, series: message.series, granularity, start, dims, value: 0, sketch: null }
        rows.set(key, row)
      }
      row.value += 1
      if (message.latency_ms !== undefined) {
        row.sketch ??= Array.from({ length: BINS }, () => 0)
        row.sketch[Math.min(BINS - 1, Math.floor(Math.log2(1 + message.latency_ms * 1000)))]! += 1
      }
    }
  }
  return [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, row]) => row)
}

const applyBatch = async (topic: string, partition: number, offsets: Array<string>, messages: Array<Message>) => {
  const client = await pool.connect()
  try {
    await client.query("begin")
    const position = await client.query<{ next_offset: string }>(
      `insert into c_positions values ($1, $2, $3, 0) on conflict (group_id, topic, partition)
       do update set next_offset = c_positions.next_offset returning next_offset::text as next_offset`,
      [GROUP, topic, partition]
    )
    const next = BigInt(position.rows[0]!.next_offset)
    const pending = messages.filter((_, i) => BigInt(offsets[i]!) >= next)
    if (pending.length > 0) {
      const inserted = await client.query<{ event_id: string }>(
        `insert into c_processed select $1, unnest($2::uuid[]) on conflict do nothing returning event_id::text as event_id`,
        [GROUP, pending.map((message) => message.event_id)]
      )
      const fresh = new Set(inserted.rows.map((row) => row.event_id))
      const rows = rowsOf(pending.filter((message) => fresh.delete(message.event_id)))
      await client.query(
        `insert into c_buckets select w, s, g, to_timestamp(b / 1000.0), d::jsonb, v, case when k = '' then null else k::bigint[] end
         from unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::text[]) as t(w, s, g, b, d, v, k)
         on conflict (workspace_id, series, granularity, bucket_start, dims) do update
         set value = c_buckets.value + excluded.value,
             sketch = case when excluded.sketch is null then c_buckets.sketch
                           else (select array_agg(coalesce(a, 0) + coalesce(b, 0)) from unnest(c_buckets.sketch, excluded.sketch) as x(a, b)) end`,
        [
          rows.map((row) => row.workspace),
          rows.map((row) => row.series),
          rows.map((row) => row.granularity),
          rows.map((row) => row.start),
          rows.map((row) => row.dims),
          rows.map((row) => row.value),
          rows.map((row) => (row.sketch === null ? "" : `{${row.sketch.join(",")}}`))
        ]
      )
      await client.query("update c_positions set next_offset = $4 where group_id = $1 and topic = $2 and partition = $3", [
        GROUP,
        topic,
        partition,
        (BigInt(offsets[offsets.length - 1]!) + 1n).toString()
      ])
    }
    await client.query("commit")
    const now = Date.now()
    for (const message of pending) freshness[Math.min(60_000, Math.max(0, now - message.acked_at))]! += 1
    aggregated += pending.length
  } catch (error) {
    await client.query("rollback")
    throw error
  } finally {
    client.release()
  }
}

const consume = async () => {
  const consumer = kafka.consumer({ groupId: GROUP, maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topics: TOPICS, fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: 6,
    eachBatch: async ({ batch }) => {
      const offsets = batch.messages.map((message) => message.offset)
      const messages = batch.messages.map((message) => JSON.parse(message.value!.toString()) as Message)
      await applyBatch(batch.topic, batch.partition, offsets, messages)
      await consumer.commitOffsets([
        { topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }
      ])
    }
  })
}

/** The q-quantile of the freshness counts, in ms (null before any event). */
const percentile = (q: number) => {
  const rank = Math.max(1, Math.ceil(q * aggregated))
  let seen = 0
  for (let ms = 0; ms < freshness.length; ms++) {
    seen += freshness[ms]!
    if (seen >= rank) return ms
  }
  return null
}

const main = async () => {
  await pool.query(SCHEMA)
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: TOPICS.map((topic) => ({ topic, numPartitions: 6 })), waitForLeaders: true })
  await admin.disconnect()
  void relay()
  await consume()
  setInterval(() => {
    const stats = { aggregated, freshness_p50_ms: percentile(0.5), freshness_p99_ms: percentile(0.99), freshness_max_ms: percentile(1) }
    console.log(JSON.stringify(stats))
  }, 1000)
  console.log("ready")
}

void main()
