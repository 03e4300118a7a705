/**
 * Metric queries over the aggregates. A range without an interval is covered
 * by the coarsest buckets that fit (days in the middle, hours and minutes at
 * the edges), so a total over any range reads few rows; with an interval the
 * points are that granularity's buckets. Ranges have minute resolution: the
 * minutes holding `start` and `end` count whole. Rates and the p95 are
 * computed from the summed counters and merged sketches.
 */
import { Effect } from "effect"
import { BadRequest } from "../http/Errors.js"
import { isInstant } from "../platform/Schemas.js"
import { bucketStart, type Granularity, unitMillis } from "./Aggregates.js"
import { isDimension, metricNamed, type SeriesSum } from "./Catalog.js"
import { AnalyticsRepo, type DimensionFilter, type Segment } from "./Repo.js"
import { emptySketch, merge, quantile } from "./Sketch.js"

/**
 * An open range's bounds: around every instant an event's time may name (an RFC 3339 time of years 1 to 9999,
 * whose offset may move it into year 0 or 10000). Before, it ran from 1970 to 9999-01-01, and events the API
 * accepted outside that were counted but shown by no query without `start` and `end`.
 */
export const ALL_TIME_START = new Date("-000001-01-01T00:00:00.000Z")
export const ALL_TIME_END = new Date("+010001-01-01T00:00:00.000Z")
const MAX_DENSE_POINTS = 2_000
/**
 * Most points a query answers (docs/limits.md). Past it the query is a 400
 * naming `interval` or `group_by`, and the database stops reading at one more
 * cell: an hourly series over years, or a group_by over every principal, would
 * otherwise be read and sorted whole, holding a worker and its memory.
 */
export const MAX_QUERY_POINTS = 10_000

export interface MetricQuery {
  readonly metric: string
  readonly group_by?: string | undefined
  readonly filters?: ReadonlyArray<DimensionFilter> | undefined
  readonly start?: string | undefined
  readonly end?: string | undefined
  readonly interval?: "hour" | "day" | undefined
}

const ceilTo = (at: Date, granularity: Granularity) => {
  const floor = bucketStart(at, granularity)
  return floor.getTime() === at.getTime() ? floor : new Date(floor.getTime() + unitMillis(granularity))
}

/** Disjoint segments of aligned buckets covering [start, end) at minute resolution. */
export const cover = (start: Date, end: Date): ReadonlyArray<Segment> => {
  const from = bucketStart(start, "minute")
  const to = ceilTo(end, "minute")
  if (from >= to) return []
  const hourFrom = ceilTo(from, "hour")
  const hourTo = bucketStart(to, "hour")
  if (hourFrom >= hourTo) return [{ granularity: "minute", from, to }]
  const edges: Array<Segment> = [
    { granularity: "minute", from, to: hourFrom },
    { granularity: "minute", from: hourTo, to }
  ]
  const dayFrom = ceilTo(hourFrom, "day")
  const dayTo = bucketStart(hourTo, "day")
  const middle: Array<Segment> =
    dayFrom >= dayTo
      ? [{ granularity: "hour", from: hourFrom, to: hourTo }]
      : [
          { granularity: "hour", from: hourFrom, to: dayFrom },
          { granularity: "hour", from: dayTo, to: hourTo },
          { granularity: "day", from: dayFrom, to: dayTo }
        ]
  return [...edges, ...middle].filter((segment) => segment.from < segment.to)
}

const invalid = (code: string, path: string, message: string) =>
  new BadRequest({ code, message: `${path}: ${message}`, details: [{ path, message }] })

const parseTime = (text: string | undefined, path: string) =>
  Effect.suspend(() => {
    if (text === undefined) return Effect.succeed(undefined)
    return isInstant(text)
      ? Effect.succeed(new Date(text))
      : Effect.fail(invalid("validation_failed", path, "expected an RFC 3339 timestamp"))
  })

/** Checks the query against the catalog: 400 for an unknown metric or dimension. */
export const checkQuery = (query: MetricQuery) =>
  Effect.gen(function* () {
    const entry = metricNamed(query.metric)
    if (entry === undefined) {
      return yield* invalid(
        "unknown_metric",
        "metric",
        `unknown metric ${JSON.stringify(query.metric)}; see GET /v1/analytics/catalog`
      )
    }
    if (query.group_by !== undefined && !isDimension(query.group_by)) {
      return yield* invalid("unknown_dimension", "group_by", `unknown dimension ${JSON.stringify(query.group_by)}`)
    }
    for (const [index, filter] of (query.filters ?? []).entries()) {
      if (!isDimension(filter.dimension)) {
        return yield* invalid(
          "unknown_dimension",
          `filters[${index}].dimension`,
          `unknown dimension ${JSON.stringify(filter.dimension)}`
        )
      }
    }
    const start = yield* parseTime(query.start, "start")
    const end = yield* parseTime(query.end, "end")
    if (start !== undefined && end !== undefined && end <= start) {
      return yield* invalid("validation_failed", "end", "must be after start")
    }
    return { entry, start, end }
  })

/** A (group, bucket) cell's key: the bucket part is digits or empty, so the first space ends it. */
const cellKey = (group: string, bucket: Date | null) => `${bucket?.getTime() ?? ""} ${group}`
/** The one value a query groups by ('' when it groups by nothing). */
const groupValue = (row: { readonly grp: ReadonlyArray<string> }) => row.grp[0] ?? ""

/** A query that would answer more than MAX_QUERY_POINTS: 400 naming what to narrow. */
const tooManyPoints = (interval: string | undefined) =>
  invalid(
    "validation_failed",
    interval === undefined ? "group_by" : "interval",
    `the query answers more than ${MAX_QUERY_POINTS} points; narrow start and end, filter, or group by less`
  )

export class AnalyticsQueries extends Effect.Service<AnalyticsQueries>()("analytics/AnalyticsQueries", {
  effect: Effect.gen(function* () {
    const repo = yield* AnalyticsRepo

    const run = Effect.fn("AnalyticsQueries.run")(function* (workspaceId: string, query: MetricQuery) {
      const { entry, start, end } = yield* checkQuery(query)
      const interval = query.interval
      const segments: ReadonlyArray<Segment> =
        interval === undefined
          ? cover(start ?? ALL_TIME_START, end ?? ALL_TIME_END)
          : [{ granularity: interval, from: bucketStart(start ?? ALL_TIME_START, interval), to: end ?? ALL_TIME_END }]
      const groupBy = query.group_by === undefined ? [] : [query.group_by]
      const select = (sum: SeriesSum) => ({
        workspaceId,
        sum,
        filters: query.filters ?? [],
        segments,
        groupBy,
        bucketed: interval !== undefined,
        maxCells: MAX_QUERY_POINTS + 1
      })
      const cells = new Map<string, { group: string; bucket: Date | null; value: number }>()
      let total = 0
      const definition = entry.definition
      if (definition.kind === "sum") {
        for (const row of yield* repo.sums(select(definition.of))) {
          const value = Number(row.value)
          cells.set(cellKey(groupValue(row), row.bucket), { group: groupValue(row), bucket: row.bucket, value })
          total += value
        }
      } else if (definition.kind === "ratio") {
        const parts = new Map<string, { group: string; bucket: Date | null; numerator: number; denominator: number }>()
        const part = (row: { grp: ReadonlyArray<string>; bucket: Date | null }) => {
          const key = cellKey(groupValue(row), row.bucket)
          const found = parts.get(key) ?? { group: groupValue(row), bucket: row.bucket, numerator: 0, denominator: 0 }
          parts.set(key, found)
          return found
        }
        for (const row of yield* repo.sums(select(definition.numerator))) part(row).numerator += Number(row.value)
        for (const row of yield* repo.sums(select(definition.denominator))) part(row).denominator += Number(row.value)
        let numerator = 0
        let denominator = 0
        for (const [key, cell] of parts) {
          numerator += cell.numerator
          denominator += cell.denominator
          cells.set(key, { ...cell, value: cell.denominator === 0 ? 0 : cell.numerator / cell.denominator })
        }
        total = denominator === 0 ? 0 : numerator / denominator
      } else {
        if ((yield* repo.sketchCells(select(definition.of), MAX_QUERY_POINTS + 1)) > MAX_QUERY_POINTS) {
          return yield* tooManyPoints(interval)
        }
        // One row per cell, its sketch merged by the database.
        const all = emptySketch()
        for (const row of yield* repo.sketches(select(definition.of))) {
          const sketch = row.counts.split(",").map(Number)
          merge(all, sketch)
          cells.set(cellKey(groupValue(row), row.bucket), {
            group: groupValue(row),
            bucket: row.bucket,
            value: quantile(sketch, definition.q)
          })
        }
        total = quantile(all, definition.q)
      }

      if (cells.size > MAX_QUERY_POINTS) return yield* tooManyPoints(interval)
      if (interval !== undefined && groupBy.length === 0 && start !== undefined && end !== undefined) {
        // A dense series for charts: every bucket of the range, zero where nothing was counted.
        const step = unitMillis(interval)
        const first = bucketStart(start, interval).getTime()
        if ((end.getTime() - first) / step <= MAX_DENSE_POINTS) {
          for (let at = first; at < end.getTime(); at += step) {
            const bucket = new Date(at)
            if (!cells.has(cellKey("", bucket))) cells.set(cellKey("", bucket), { group: "", bucket, value: 0 })
          }
        }
      }

      const ordered = [...cells.values()].sort((a, b) =>
        interval !== undefined
          ? a.bucket!.getTime() - b.bucket!.getTime() || a.group.localeCompare(b.group)
          : b.value - a.value || a.group.localeCompare(b.group)
      )
      const points =
        interval === undefined && groupBy.length === 0
          ? [{ label: "total", value: total }]
          : ordered.map((cell) => ({
              label:
                interval === undefined
                  ? cell.group
                  : groupBy.length === 0
                    ? cell.bucket!.toISOString()
                    : `${cell.bucket!.toISOString()} ${cell.group}`,
              value: cell.value
            }))
      return { metric: entry.metric, group_by: query.group_by ?? null, points, total }
    })

    return { run }
  }),
  dependencies: [AnalyticsRepo.Default]
}) {}
