/**
 * SQL of analytics: sums and merged latency sketches over aggregate buckets
 * (never raw traces), dimension values seen per workspace, and saved views.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { boundedDimensionValue, type Granularity } from "./Aggregates.js"
import type { SeriesSum } from "./Catalog.js"
import { BINS } from "./Sketch.js"

/** A time range of one granularity: buckets starting in [from, to). */
export interface Segment {
  readonly granularity: Granularity
  readonly from: Date
  readonly to: Date
}

export interface DimensionFilter {
  readonly dimension: string
  readonly values: ReadonlyArray<string>
}

export interface SumSelection {
  readonly workspaceId: string
  readonly sum: SeriesSum
  readonly filters: ReadonlyArray<DimensionFilter>
  readonly segments: ReadonlyArray<Segment>
  /** Dimensions to group by; each row's `grp` holds their values in this order ("(none)" when absent). */
  readonly groupBy: ReadonlyArray<string>
  /** Group by bucket start too (time series). */
  readonly bucketed: boolean
  /** Most (group, bucket) cells to read: the caller refuses a query that reaches it (MAX_QUERY_POINTS). */
  readonly maxCells?: number
  /** Largest sums first (so `maxCells` keeps the largest groups). */
  readonly largestFirst?: boolean
}

export const NO_VALUE = "(none)"

/**
 * A group's values, read from a JSON array: no value can blur into another, as joining them with a
 * separator would let a value holding it do.
 */
const GroupValues = Schema.parseJson(Schema.Array(Schema.String))

/** A sum per group (and bucket start when bucketed); `sum(value)::text`. */
const SumRow = Schema.Struct({ grp: GroupValues, bucket: Schema.NullOr(Schema.DateFromSelf), value: Schema.String })

/** The merged sketch of a group (and bucket start when bucketed): its bins' counts, comma-separated. */
const SketchRow = Schema.Struct({
  grp: GroupValues,
  bucket: Schema.NullOr(Schema.DateFromSelf),
  counts: Schema.String
})

const DimensionValueRow = Schema.Struct({ dimension: Schema.String, value: Schema.String })

const ViewRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  name: Schema.String,
  is_default: Schema.Boolean,
  config: Schema.Unknown,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type ViewRow = typeof ViewRow.Type

const NewView = ViewRow.pipe(Schema.omit("created_at", "updated_at"))
const ViewKey = Schema.Struct({ workspaceId: Schema.String, id: Schema.String })
const ViewValues = Schema.Struct({ name: Schema.String, is_default: Schema.Boolean, config: Schema.Unknown })

const decodeSums = Schema.decodeUnknown(Schema.Array(SumRow))
const decodeSketches = Schema.decodeUnknown(Schema.Array(SketchRow))
const decodeCount = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({ cells: Schema.Number })))
const decodeDimensionValues = Schema.decodeUnknown(Schema.Array(DimensionValueRow))

export class AnalyticsRepo extends Effect.Service<AnalyticsRepo>()("analytics/AnalyticsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const where = (selection: SumSelection) => {
      const restrictions = [
        ...Object.entries(selection.sum.where ?? {}).map(([dimension, values]) => ({ dimension, values })),
        ...selection.filters.filter((filter) => filter.values.length > 0)
      ]
      return sql.and([
        sql`workspace_id = ${selection.workspaceId}`,
        sql`series = ${selection.sum.series}`,
        sql.or(
          selection.segments.map(
            (segment) =>
              sql`(granularity = ${segment.granularity} and bucket_start >= ${segment.from} and bucket_start < ${segment.to})`
          )
        ),
        // Values as stored: one past MAX_DIMENSION_BYTES finds what it was counted under.
        ...restrictions.map(
          (restriction) =>
            sql`dims->>${restriction.dimension} in ${sql.in(restriction.values.map(boundedDimensionValue))}`
        )
      ])
    }

    const group = (selection: SumSelection) =>
      sql`jsonb_build_array(${sql.join(
        ", ",
        false
      )(selection.groupBy.map((dimension) => sql`coalesce(dims->>${dimension}, ${NO_VALUE})`))})::text`

    const bucket = (selection: SumSelection) => (selection.bucketed ? sql`bucket_start` : sql`null::timestamptz`)

    /**
     * Each bin's sum over a cell's rows, in bin order, as one text: one row per cell. Before, every sketch was
     * unnested and each (cell, bin) was a row, zero bins too: a p95 of 10,000 cells had the database unnest
     * for seconds, then read 1,280,000 rows into the process (seconds more of the event loop).
     */
    const binSums = sql`array_to_string(array[${sql.join(
      ", ",
      false
    )(Array.from({ length: BINS }, (_, bin) => sql.literal(`coalesce(sum(sketch[${bin + 1}]), 0)`)))}], ',')`

    const listViews = SqlSchema.findAll({
      Request: Schema.String,
      Result: ViewRow,
      execute: (workspaceId) => sql`select * from analytics_views where workspace_id = ${workspaceId}
                                    order by created_at desc, id desc`
    })
    const findView = SqlSchema.findOne({
      Request: ViewKey,
      Result: ViewRow,
      execute: ({ id, workspaceId }) =>
        sql`select * from analytics_views where workspace_id = ${workspaceId} and id = ${id}`
    })
    const insertView = SqlSchema.single({
      Request: NewView,
      Result: ViewRow,
      execute: (row) => sql`insert into analytics_views (id, workspace_id, name, is_default, config)
                            values (${row.id}, ${row.workspace_id}, ${row.name}, ${row.is_default}, ${JSON.stringify(row.config)})
                            returning *`
    })
    const updateView = SqlSchema.findOne({
      Request: Schema.Struct({ key: ViewKey, values: ViewValues }),
      Result: ViewRow,
      execute: ({ key, values }) =>
        sql`update analytics_views set name = ${values.name}, is_default = ${values.is_default},
              config = ${JSON.stringify(values.config)}, updated_at = now()
            where workspace_id = ${key.workspaceId} and id = ${key.id} returning *`
    })
    const deleteView = SqlSchema.findAll({
      Request: ViewKey,
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ id, workspaceId }) =>
        sql`delete from analytics_views where workspace_id = ${workspaceId} and id = ${id} returning id`
    })

    return dieOnErrors({
      sums: (selection: SumSelection) =>
        selection.segments.length === 0
          ? Effect.succeed([])
          : sql`
              select ${group(selection)} as grp, ${bucket(selection)} as bucket, sum(value)::text as value
              from analytics_buckets where ${where(selection)}
              group by 1, 2 ${selection.largestFirst === true ? sql`order by sum(value) desc, 1` : sql``}
              ${selection.maxCells === undefined ? sql`` : sql`limit ${selection.maxCells}`}`.pipe(
              Effect.flatMap(decodeSums)
            ),
      sketches: (selection: SumSelection) =>
        selection.segments.length === 0
          ? Effect.succeed([])
          : sql`
              select ${group(selection)} as grp, ${bucket(selection)} as bucket, ${binSums} as counts
              from analytics_buckets where ${where(selection)} and sketch is not null
              group by 1, 2 ${selection.maxCells === undefined ? sql`` : sql`limit ${selection.maxCells}`}`.pipe(
              Effect.flatMap(decodeSketches)
            ),
      /**
       * How many (group, bucket) cells have sketches, counted up to `limit`: cheap beside `sketches`, which
       * unnests every sketch's bins before it can stop, so a query past the cap is refused before that.
       */
      sketchCells: (selection: SumSelection, limit: number) =>
        selection.segments.length === 0
          ? Effect.succeed(0)
          : sql`
              select count(*)::int as cells from (
                select ${group(selection)} as grp, ${bucket(selection)} as bucket
                from analytics_buckets where ${where(selection)} and sketch is not null
                group by 1, 2 limit ${limit}) found`.pipe(
              Effect.flatMap(decodeCount),
              Effect.map(([row]) => row.cells)
            ),
      /** The `perDimension` most counted values of each dimension seen in the workspace, most counted first. */
      dimensionValues: (workspaceId: string, perDimension: number) =>
        sql`
          select dimension, value from (
            select d.key as dimension, d.value as value,
                   row_number() over (partition by d.key order by sum(b.value) desc, d.value) as rank
            from analytics_buckets b cross join lateral jsonb_each_text(b.dims) d
            where b.workspace_id = ${workspaceId} and b.granularity = 'day'
            group by 1, 2) ranked
          where rank <= ${perDimension}
          order by dimension, rank`.pipe(Effect.flatMap(decodeDimensionValues)),
      listViews: (workspaceId: string) => listViews(workspaceId),
      findView: (workspaceId: string, id: string) => Effect.map(findView({ workspaceId, id }), Option.getOrUndefined),
      insertView: (row: Omit<ViewRow, "created_at" | "updated_at">) => insertView(row),
      updateView: (workspaceId: string, id: string, values: { name: string; is_default: boolean; config: unknown }) =>
        Effect.map(updateView({ key: { workspaceId, id }, values }), Option.getOrUndefined),
      clearDefault: (workspaceId: string, exceptId: string) =>
        sql`update analytics_views set is_default = false, updated_at = now()
            where workspace_id = ${workspaceId} and is_default and id <> ${exceptId}`,
      deleteView: (workspaceId: string, id: string) =>
        Effect.map(deleteView({ workspaceId, id }), (rows) => rows.length > 0)
    })
  })
}) {}
