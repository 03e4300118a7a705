/**
 * The aggregate store: per workspace, series and dimension tuple, one row per
 * minute, hour and day bucket, holding a sum (and, for decisions, a latency
 * sketch). `addMany` merges deltas in memory and upserts each row once, in
 * key order (concurrent writers lock rows in the same order, so they cannot
 * deadlock). Call it inside the transaction of the change it counts: the
 * stream consumers do (with their dedupe records and positions), and so can
 * other domains, e.g. `add(workspaceId, at, "redteam_landed", { agent_id }, 1)`.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { SeriesName } from "./Catalog.js"
import { emptySketch, record, toPgArray } from "./Sketch.js"

export const granularities = ["minute", "hour", "day"] as const
export type Granularity = (typeof granularities)[number]

const UNIT_MS: Record<Granularity, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }

/** Start of the UTC bucket holding `at`. */
export const bucketStart = (at: Date, granularity: Granularity) =>
  new Date(Math.floor(at.getTime() / UNIT_MS[granularity]) * UNIT_MS[granularity])

export const unitMillis = (granularity: Granularity) => UNIT_MS[granularity]

export type Dimensions = Readonly<Record<string, string | null | undefined>>

export interface AggregateDelta {
  readonly workspaceId: string
  /** When the counted thing happened (event time): it picks the buckets. */
  readonly at: Date
  readonly series: SeriesName
  readonly dims: Dimensions
  readonly value: number
  /** Recorded in the row's latency sketch. */
  readonly latencyMs?: number
}

interface Row {
  workspace_id: string
  granularity: Granularity
  bucket_start: Date
  series: string
  dims: string
  value: number
  sketch: Array<number> | null
}

/**
 * The most UTF-8 bytes of a dimension value kept. A bucket's dimensions are part of its primary key, and
 * an index entry holds at most about 2.7 KB: a longer value (a workflow step, which a decision's metadata
 * may carry up to 65,536 characters long) failed the insert, and the event was dead-lettered uncounted.
 * Longer values keep their first bytes, cut at a character, and end with "…".
 */
export const MAX_DIMENSION_BYTES = 256

const utf8 = new TextEncoder()
const fromUtf8 = new TextDecoder()

export const boundedDimensionValue = (value: string) => {
  // Three bytes a UTF-16 unit at most: short values need no encoding.
  if (value.length * 3 <= MAX_DIMENSION_BYTES) return value
  const bytes = utf8.encode(value)
  if (bytes.length <= MAX_DIMENSION_BYTES) return value
  let end = MAX_DIMENSION_BYTES - 3 // room for the ellipsis
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end-- // not inside a character
  return `${fromUtf8.decode(bytes.subarray(0, end))}…`
}

/** Dimensions as canonical JSON: keys sorted, absent values dropped, values bounded (MAX_DIMENSION_BYTES). */
export const canonicalDims = (dims: Dimensions) =>
  JSON.stringify(
    Object.fromEntries(
      Object.entries(dims)
        .filter((entry): entry is [string, string] => typeof entry[1] === "string")
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([dimension, value]) => [dimension, boundedDimensionValue(value)])
    )
  )

/** One row per bucket key with the deltas summed, sorted by key. */
export const rowsOf = (deltas: ReadonlyArray<AggregateDelta>): ReadonlyArray<Row> => {
  const rows = new Map<string, Row>()
  for (const delta of deltas) {
    const dims = canonicalDims(delta.dims)
    for (const granularity of granularities) {
      const start = bucketStart(delta.at, granularity)
      const key = `${delta.workspaceId}\u0000${delta.series}\u0000${granularity}\u0000${start.getTime()}\u0000${dims}`
      let row = rows.get(key)
      if (row === undefined) {
        row = {
          workspace_id: delta.workspaceId,
          granularity,
          bucket_start: start,
          series: delta.series,
          dims,
          value: 0,
          sketch: null
        }
        rows.set(key, row)
      }
      row.value += delta.value
      if (delta.latencyMs !== undefined) row.sketch = record(row.sketch ?? emptySketch(), delta.latencyMs)
    }
  }
  return [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row)
}

const CHUNK = 1000

export class Aggregates extends Effect.Service<Aggregates>()("analytics/Aggregates", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Adds the deltas with the caller's connection (call inside its transaction). */
    const addMany = Effect.fn("Aggregates.addMany")(function* (deltas: ReadonlyArray<AggregateDelta>) {
      const rows = rowsOf(deltas)
      for (let start = 0; start < rows.length; start += CHUNK) {
        const chunk = rows.slice(start, start + CHUNK).map((row) => ({
          ...row,
          sketch: row.sketch === null ? null : toPgArray(row.sketch)
        }))
        yield* sql`
            insert into analytics_buckets ${sql.insert(chunk)}
            on conflict (workspace_id, series, granularity, bucket_start, dims) do update
            set value = analytics_buckets.value + excluded.value,
                sketch = analytics_sketch_merge(analytics_buckets.sketch, excluded.sketch),
                updated_at = now()`
      }
    })

    /** Adds `value` to `series` for the workspace at `at` (a database failure is a defect). */
    const add = (workspaceId: string, at: Date, series: SeriesName, dims: Dimensions, value: number) =>
      addMany([{ workspaceId, at, series, dims, value }]).pipe(Effect.orDie)

    return { add, addMany }
  })
}) {}
