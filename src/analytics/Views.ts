/**
 * Saved dashboard views, checked against the catalog: every widget's metric,
 * chart type and group_by, and every filter's dimension must exist; widget
 * ids are unique within a view; layouts are non-negative integers. At most
 * one view per workspace is the default, and a workspace has at most
 * MAX_ANALYTICS_VIEWS_PER_WORKSPACE views (the list is unpaged). Writes of one
 * workspace's views take turns on one lock, so neither the cap nor the one
 * default can be slipped past by concurrent requests.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { BadRequest, NotFound } from "../http/Errors.js"
import { AppConfig } from "../platform/Config.js"
import { prefixedId } from "../platform/Ids.js"
import { toTimestamp } from "../platform/Schemas.js"
import { lockKey, transactionOf } from "../platform/Sql.js"
import { capReached, storeWithinCap } from "../platform/WorkspaceCaps.js"
import { chartTypes, isChartType, isDimension, metricNamed } from "./Catalog.js"
import { ViewId } from "./Domain.js"
import { AnalyticsRepo, type ViewRow } from "./Repo.js"

export interface ViewConfigInput {
  readonly filters: ReadonlyArray<{ readonly dimension: string; readonly values: ReadonlyArray<string> }>
  readonly widgets: ReadonlyArray<{
    readonly id: string
    readonly title: string
    readonly metric: string
    readonly chart_type: string
    readonly group_by?: string | undefined
    readonly layout?: { readonly x: number; readonly y: number; readonly w: number; readonly h: number } | undefined
  }>
}

/** Every problem of a view config, with its path (empty when valid). */
export const configProblems = (config: ViewConfigInput, base = "config") => {
  const problems: Array<{ path: string; message: string }> = []
  config.filters.forEach((filter, index) => {
    if (!isDimension(filter.dimension)) {
      problems.push({
        path: `${base}.filters[${index}].dimension`,
        message: `unknown dimension ${JSON.stringify(filter.dimension)}`
      })
    }
  })
  const seen = new Set<string>()
  config.widgets.forEach((widget, index) => {
    const path = `${base}.widgets[${index}]`
    if (seen.has(widget.id))
      problems.push({ path: `${path}.id`, message: `duplicate widget id ${JSON.stringify(widget.id)}` })
    seen.add(widget.id)
    if (metricNamed(widget.metric) === undefined) {
      problems.push({ path: `${path}.metric`, message: `unknown metric ${JSON.stringify(widget.metric)}` })
    }
    if (!isChartType(widget.chart_type)) {
      problems.push({ path: `${path}.chart_type`, message: `expected one of ${chartTypes.join(", ")}` })
    }
    if (widget.group_by !== undefined && !isDimension(widget.group_by)) {
      problems.push({ path: `${path}.group_by`, message: `unknown dimension ${JSON.stringify(widget.group_by)}` })
    }
    for (const side of ["x", "y", "w", "h"] as const) {
      const value = widget.layout?.[side]
      if (value !== undefined && (!Number.isInteger(value) || value < 0)) {
        problems.push({ path: `${path}.layout.${side}`, message: "expected a non-negative integer" })
      }
    }
  })
  return problems
}

const validated = (config: ViewConfigInput) => {
  const problems = configProblems(config)
  return problems.length === 0
    ? Effect.void
    : Effect.fail(
        new BadRequest({
          code: "validation_failed",
          message: `${problems[0]!.path}: ${problems[0]!.message}`,
          details: problems
        })
      )
}

const toView = (row: ViewRow) => ({
  id: ViewId.make(row.id),
  name: row.name,
  is_default: row.is_default,
  config: (typeof row.config === "string" ? JSON.parse(row.config) : row.config) as ViewConfigInput,
  created_at: toTimestamp(row.created_at),
  updated_at: toTimestamp(row.updated_at)
})

const viewNotFound = (id: string) =>
  new NotFound({ code: "view_not_found", message: `No analytics view ${id} in this workspace.` })

export class Views extends Effect.Service<Views>()("analytics/Views", {
  effect: Effect.gen(function* () {
    const repo = yield* AnalyticsRepo
    const sql = yield* SqlClient.SqlClient
    const transaction = transactionOf(sql)
    const maxViews = (yield* AppConfig).maxAnalyticsViewsPerWorkspace

    const list = Effect.fn("Views.list")(function* (workspaceId: string) {
      return { views: (yield* repo.listViews(workspaceId)).map(toView) }
    })

    const create = Effect.fn("Views.create")(function* (
      workspaceId: string,
      input: { readonly name: string; readonly config: ViewConfigInput; readonly is_default?: boolean | undefined }
    ) {
      yield* validated(input.config)
      const inserted = yield* storeWithinCap(
        sql,
        "analytics_views",
        workspaceId,
        maxViews,
        Effect.succeed(false),
        Effect.gen(function* () {
          const row = yield* repo.insertView({
            id: prefixedId("view"),
            workspace_id: workspaceId,
            name: input.name,
            is_default: input.is_default ?? false,
            config: input.config
          })
          if (row.is_default) yield* repo.clearDefault(workspaceId, row.id)
          return toView(row)
        })
      ).pipe(Effect.orDie)
      if (Option.isNone(inserted)) {
        return yield* capReached(
          "analytics_view_limit_reached",
          maxViews,
          "analytics views",
          "MAX_ANALYTICS_VIEWS_PER_WORKSPACE"
        )
      }
      return inserted.value
    })

    const update = Effect.fn("Views.update")(function* (
      workspaceId: string,
      id: string,
      patch: {
        readonly name?: string | undefined
        readonly config?: ViewConfigInput | undefined
        readonly is_default?: boolean | undefined
      }
    ) {
      if (patch.config !== undefined) yield* validated(patch.config)
      return yield* transaction(
        Effect.gen(function* () {
          // The lock creates take (storeWithinCap's key): with concurrent writes, each one clearing the other
          // defaults sees the default the one before it set, so one default stays.
          yield* lockKey(sql, `analytics_views:${workspaceId}`)
          const current = yield* repo.findView(workspaceId, id)
          if (current === undefined) return yield* viewNotFound(id)
          const view = toView(current)
          const row = yield* repo.updateView(workspaceId, id, {
            name: patch.name ?? view.name,
            is_default: patch.is_default ?? view.is_default,
            config: patch.config ?? view.config
          })
          if (row === undefined) return yield* viewNotFound(id)
          if (row.is_default) yield* repo.clearDefault(workspaceId, row.id)
          return toView(row)
        })
      )
    })

    const remove = Effect.fn("Views.remove")(function* (workspaceId: string, id: string) {
      if (!(yield* repo.deleteView(workspaceId, id))) return yield* viewNotFound(id)
    })

    return { list, create, update, remove }
  }),
  dependencies: [AnalyticsRepo.Default]
}) {}
