/**
 * The route table, derived from the contract itself: each endpoint's group
 * and name, method, path template, accepted body media type, body limit and
 * schemas. The request pipeline finds each request's route here once, and
 * the fast lane decodes and encodes with the same schemas the router does.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Context, Option, type Schema, SchemaAST } from "effect"
import { Authentication } from "../identity/Authentication.js"

export type BodyKind = "none" | "json" | "yaml" | "other"

/** Endpoint annotation: the endpoint's own body limit instead of MAX_BODY_BYTES (file uploads above it, YAML documents below). */
export class MaxBodyBytes extends Context.Tag("http/MaxBodyBytes")<MaxBodyBytes, number>() {}

/**
 * Endpoint annotation: a report query (it aggregates or scans history, and may run for seconds). At most
 * MAX_CONCURRENT_REPORTS run at once, and at most MAX_CONCURRENT_REPORTS_PER_WORKSPACE of one workspace
 * (ReportPermits.ts), so reports cannot take every database connection, nor one workspace every report's turn.
 * The permits are taken once the caller is known, so a report endpoint must be behind `Authentication`.
 */
export class ReportQuery extends Context.Tag("http/ReportQuery")<ReportQuery, true>() {}

export interface RouteEntry {
  readonly group: string
  readonly endpoint: string
  readonly method: string
  readonly template: string
  readonly pattern: RegExp
  /** The template's parameters as (path segment index, name). */
  readonly params: ReadonlyArray<readonly [number, string]>
  readonly body: BodyKind
  /** The body is a JSON object (Effect's Struct decoding would take an array for one: `[]` as `{}`). */
  readonly objectBody: boolean
  /** Body limit of this endpoint, when it has its own. */
  readonly maxBodyBytes: number | undefined
  /** A report query: served within the process's and its workspace's report permits. */
  readonly report: boolean
  /** The contract's schemas of the endpoint's path parameters, body and success, and the success status. */
  readonly pathSchema: Schema.Schema.AnyNoContext | undefined
  readonly payloadSchema: Schema.Schema.AnyNoContext | undefined
  readonly urlParamsSchema: Schema.Schema.AnyNoContext | undefined
  readonly successSchema: Schema.Schema.AnyNoContext
  readonly successStatus: number
}

const bodyKindOf = (method: string, payload: Option.Option<Schema.Schema.All>): BodyKind => {
  if (method === "GET" || method === "HEAD" || Option.isNone(payload)) return "none"
  const encoding = HttpApiSchema.getEncoding(payload.value.ast)
  if (encoding.kind === "Json") return "json"
  return encoding.contentType.includes("yaml") ? "yaml" : "other"
}

/** Whether a schema's encoded side is an object (a struct or class, refined, or a union of them). */
const isObjectAst = (ast: SchemaAST.AST): boolean => {
  switch (ast._tag) {
    case "TypeLiteral":
      return true
    case "Refinement":
    case "Transformation":
      return isObjectAst(ast.from)
    case "Suspend":
      return isObjectAst(ast.f())
    case "Union":
      return ast.types.every(isObjectAst)
    default:
      return false
  }
}

/** Reflection types an endpoint's schemas as `never`; the table holds them as the schemas of any value. */
const untyped = (schema: Schema.Schema.All) => schema as unknown as Schema.Schema.AnyNoContext

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

export const makeRouteTable = (api: HttpApi.HttpApi.Any): ReadonlyArray<RouteEntry> => {
  const routes: Array<RouteEntry> = []
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, middleware }) => {
      const report = Context.getOption(endpoint.annotations, ReportQuery).pipe(Option.isSome)
      if (report && ![...middleware].some((tag) => tag.key === Authentication.key)) {
        // Otherwise it would run without taking a report permit (they are taken by the credential middleware).
        throw new Error(`ReportQuery endpoint ${group.identifier}.${endpoint.name} is not behind Authentication`)
      }
      const source = escapeRegex(endpoint.path).replace(/:[A-Za-z_][A-Za-z0-9_]*/g, "[^/]+")
      routes.push({
        group: group.identifier,
        endpoint: endpoint.name,
        method: endpoint.method,
        template: endpoint.path,
        pattern: new RegExp(`^${source}/?$`),
        params: endpoint.path
          .split("/")
          .flatMap((segment, index) => (segment.startsWith(":") ? [[index, segment.slice(1)] as const] : [])),
        body: bodyKindOf(endpoint.method, endpoint.payloadSchema),
        objectBody: Option.exists(endpoint.payloadSchema, (schema) => isObjectAst(schema.ast)),
        maxBodyBytes: Context.getOption(endpoint.annotations, MaxBodyBytes).pipe(Option.getOrUndefined),
        report,
        pathSchema: Option.getOrUndefined(Option.map(endpoint.pathSchema, untyped)),
        payloadSchema: Option.getOrUndefined(Option.map(endpoint.payloadSchema, untyped)),
        urlParamsSchema: Option.getOrUndefined(Option.map(endpoint.urlParamsSchema, untyped)),
        successSchema: untyped(endpoint.successSchema),
        successStatus: HttpApiSchema.getStatusSuccess(endpoint.successSchema)
      })
    }
  })
  // Static segments win over parameters, as in the router.
  return routes.sort((a, b) => (a.template.match(/:/g)?.length ?? 0) - (b.template.match(/:/g)?.length ?? 0))
}

export const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/** How many `/` a path has, less a trailing one: a template's parameter stands for one segment, so they must agree. */
const depthOf = (path: string) => {
  let slashes = 0
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47) slashes++
  return path.length > 1 && path.endsWith("/") ? slashes - 1 : slashes
}

interface RouteIndex {
  /** Routes without parameters by "METHOD /path": most requests are found here without a regex test. */
  readonly byPath: ReadonlyMap<string, RouteEntry>
  /** Every route by "METHOD depth", in table order: a path is tested against a few patterns, not all. */
  readonly byDepth: ReadonlyMap<string, ReadonlyArray<RouteEntry>>
}

const indexes = new WeakMap<ReadonlyArray<RouteEntry>, RouteIndex>()

const indexOf = (routes: ReadonlyArray<RouteEntry>): RouteIndex => {
  let index = indexes.get(routes)
  if (index === undefined) {
    const byPath = new Map<string, RouteEntry>()
    const byDepth = new Map<string, Array<RouteEntry>>()
    for (const route of routes) {
      const key = `${route.method} ${route.template}`
      if (!route.template.includes(":") && !byPath.has(key)) byPath.set(key, route)
      const depth = `${route.method} ${depthOf(route.template)}`
      byDepth.set(depth, [...(byDepth.get(depth) ?? []), route])
    }
    index = { byPath, byDepth }
    indexes.set(routes, index)
  }
  return index
}

export const findRoute = (routes: ReadonlyArray<RouteEntry>, method: string, url: string) => {
  const path = pathOf(url)
  const { byPath, byDepth } = indexOf(routes)
  return (
    byPath.get(`${method} ${path}`) ??
    byDepth.get(`${method} ${depthOf(path)}`)?.find((route) => route.pattern.test(path))
  )
}

/** `:name` segments of the route's template, read from the URL's path (percent-decoded, as the router does). */
export const pathParams = (route: RouteEntry, url: string) => {
  const params: Record<string, string> = {}
  if (route.params.length === 0) return params
  const path = pathOf(url).split("/")
  for (const [index, name] of route.params) {
    const segment = path[index] ?? ""
    params[name] = segment.includes("%") ? percentDecoded(segment) : segment
  }
  return params
}

/** A path segment percent-decoded; a malformed escape is kept as sent (the path schema then refuses it). */
const percentDecoded = (segment: string) => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}
