/**
 * Provider connections and gateway routes. The provider key is encrypted
 * before it reaches the repository and never leaves this service in the
 * clear except to the proxy (`target`), as a Redacted value.
 */
import { Effect, Option, type Redacted } from "effect"
import { auditedWrites, checkedWrites } from "../audit/Chain.js"
import { makeNoticeCache } from "../platform/ChangeNotices.js"
import { BadRequest, NotFound } from "../http/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { toTimestamp } from "../platform/Schemas.js"
import { orFailWith } from "../platform/Sql.js"
import { capReached } from "../platform/WorkspaceCaps.js"
import { AppConfig } from "../platform/Config.js"
import {
  GatewayRoute,
  GatewayRouteId,
  ProviderConnection,
  ProviderConnectionId,
  type ProviderKind,
  type RouteGuardrails,
  type RouteGuardrailsInput
} from "./Domain.js"
import { ProviderKeyCipher } from "./ProviderKeyCipher.js"
import { type ConnectionChanges, type ConnectionRow, GatewayRepo, type RouteChanges, type RouteRow } from "./Repo.js"

export const DEFAULT_BASE_URL: Record<ProviderKind, string> = {
  chat_compatible: "https://api.openai.com/v1",
  messages_compatible: "https://api.anthropic.com"
}

/** What the proxy needs of a route: where to send, and with which key. */
export interface RouteTarget {
  readonly routeId: string
  readonly agentId: string
  readonly connectionId: string
  readonly baseUrl: string
  readonly defaultModel: string | null
  /** None when the stored key cannot be decrypted with this service's key. */
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  /** What the gateway decides on this route, per direction (Guardrails.ts). */
  readonly guardrails: RouteGuardrails
}

/** The route's guardrail modes from its columns. */
const guardrailsOf = (row: Pick<RouteRow, "guardrail_input" | "guardrail_output" | "guardrail_tool_calls">) => ({
  input: row.guardrail_input,
  output: row.guardrail_output,
  tool_calls: row.guardrail_tool_calls
})

/** The columns of the guardrail modes given (a PATCH changes only those). */
const guardrailColumns = (input: RouteGuardrailsInput | undefined): RouteChanges => ({
  ...(input?.input === undefined ? {} : { guardrail_input: input.input }),
  ...(input?.output === undefined ? {} : { guardrail_output: input.output }),
  ...(input?.tool_calls === undefined ? {} : { guardrail_tool_calls: input.tool_calls })
})

const toRoute = (row: RouteRow) =>
  new GatewayRoute({
    id: GatewayRouteId.make(row.id),
    agent_id: row.agent_id,
    display_name: row.display_name,
    provider_connection_id: row.provider_connection_id,
    guardrails: guardrailsOf(row),
    created_at: toTimestamp(row.created_at),
    updated_at: toTimestamp(row.updated_at)
  })

const connectionNotFound = (id: string, path?: string) =>
  new NotFound({
    code: "provider_connection_not_found",
    message: `Provider connection ${id} does not exist in this workspace.`,
    ...(path === undefined ? {} : { details: [{ path, message: "not a provider connection of this workspace" }] })
  })

const routeNotFound = (id: string) =>
  new NotFound({ code: "gateway_route_not_found", message: `Gateway route ${id} does not exist in this workspace.` })

/** Connections and routes have no DELETE: one no longer needed is changed into the one wanted. */
const REUSE = "change one it no longer needs (PATCH)"

export class Connections extends Effect.Service<Connections>()("gateway/Connections", {
  scoped: Effect.gen(function* () {
    const repo = yield* GatewayRepo
    const cipher = yield* ProviderKeyCipher
    const outbound = yield* OutboundGuard
    // Every connection and route is in its unpaged list: a workspace may store this many of each.
    const { maxGatewayRoutesPerWorkspace: maxRoutes, maxProviderConnectionsPerWorkspace: maxConnections } =
      yield* AppConfig
    // Writes are audited, in a transaction opened only once base_url is checked (a DNS lookup of up to 3 s);
    // cached targets are dropped once it is committed.
    const write = yield* auditedWrites
    const checkedWrite = yield* checkedWrites
    // The proxy resolves a route per request: cached until a connection or route of the workspace changes (in any instance).
    const targets = yield* makeNoticeCache<RouteTarget>("gateway_routes")

    /**
     * https, or plain http to hosts on HTTP_URL_ALLOWLIST; never an internal address unless allowlisted
     * (the outbound guard, docs/outbound.md). Answers the URL without a trailing slash.
     */
    const checkBaseUrl = (value: string) =>
      Effect.gen(function* () {
        const url = yield* outbound.validateUrl(value, "base_url")
        if (url.search !== "" || url.hash !== "") {
          return yield* new BadRequest({
            code: "validation_failed",
            message: "base_url: expected a URL without query or fragment.",
            details: [{ path: "base_url", message: "expected a URL without query or fragment" }]
          })
        }
        return url.toString().replace(/\/+$/, "")
      })

    const toConnection = (row: ConnectionRow) =>
      new ProviderConnection({
        id: ProviderConnectionId.make(row.id),
        display_name: row.display_name,
        kind: row.kind as ProviderKind,
        base_url: row.base_url,
        default_model: row.default_model,
        credential_status: Option.isSome(cipher.decrypt(row.workspace_id, row.id, row.encrypted_api_key))
          ? "configured"
          : "unreadable",
        created_at: toTimestamp(row.created_at),
        updated_at: toTimestamp(row.updated_at)
      })

    const listConnections = Effect.fn("Connections.listConnections")(function* (workspaceId: string) {
      return (yield* repo.listConnections(workspaceId)).map(toConnection)
    })

    const createConnection = Effect.fn("Connections.createConnection")(function* (
      workspaceId: string,
      input: {
        readonly display_name: string
        readonly kind: ProviderKind
        readonly provider_api_key: Redacted.Redacted<string>
        readonly base_url?: string | undefined
        readonly default_model?: string | null | undefined
      }
    ) {
      const id = prefixedId("pc")
      const inserted = yield* checkedWrite(checkBaseUrl(input.base_url ?? DEFAULT_BASE_URL[input.kind]), (baseUrl) =>
        repo.insertConnection(
          {
            id,
            workspace_id: workspaceId,
            display_name: input.display_name,
            kind: input.kind,
            base_url: baseUrl,
            default_model: input.default_model ?? null,
            encrypted_api_key: cipher.encrypt(workspaceId, id, input.provider_api_key)
          },
          maxConnections
        )
      )
      if (Option.isNone(inserted)) {
        return yield* capReached(
          "provider_connection_limit_reached",
          maxConnections,
          "provider connections",
          "MAX_PROVIDER_CONNECTIONS_PER_WORKSPACE",
          REUSE
        )
      }
      return toConnection(inserted.value)
    })

    const updateConnection = Effect.fn("Connections.updateConnection")(function* (
      workspaceId: string,
      id: string,
      patch: {
        readonly display_name?: string | undefined
        readonly provider_api_key?: Redacted.Redacted<string> | undefined
        readonly base_url?: string | null | undefined
        readonly default_model?: string | null | undefined
      }
    ) {
      // The kind (which names the default base_url) never changes: read before the check, outside the transaction.
      const found = yield* repo.findConnection(workspaceId, id).pipe(orFailWith(() => connectionNotFound(id)))
      const checkNewBaseUrl =
        patch.base_url === undefined
          ? Effect.succeed(undefined)
          : checkBaseUrl(patch.base_url ?? DEFAULT_BASE_URL[found.kind as ProviderKind])
      const row = yield* checkedWrite(checkNewBaseUrl, (baseUrl) =>
        Effect.gen(function* () {
          // Compared with the row locked: a base_url changed meanwhile is the one the stored key must not follow.
          const current = yield* repo.lockConnection(workspaceId, id).pipe(orFailWith(() => connectionNotFound(id)))
          const changes: { -readonly [K in keyof ConnectionChanges]: ConnectionChanges[K] } = {}
          if (patch.display_name !== undefined) changes.display_name = patch.display_name
          if (patch.default_model !== undefined) changes.default_model = patch.default_model
          if (baseUrl !== undefined) {
            // The stored key must not follow a new base_url to another server: moving it takes a key for it.
            if (baseUrl !== current.base_url && patch.provider_api_key === undefined) {
              return yield* new BadRequest({
                code: "validation_failed",
                message: "provider_api_key: changing base_url requires provider_api_key in the same request.",
                details: [{ path: "provider_api_key", message: "required when base_url changes" }]
              })
            }
            changes.base_url = baseUrl
          }
          if (patch.provider_api_key !== undefined) {
            changes.encrypted_api_key = cipher.encrypt(workspaceId, id, patch.provider_api_key)
          }
          if (Object.keys(changes).length === 0) return current
          return yield* repo.updateConnection(workspaceId, id, changes).pipe(orFailWith(() => connectionNotFound(id)))
        })
      )
      yield* targets.changed(workspaceId)
      return toConnection(row)
    })

    const checkConnection = (workspaceId: string, id: string) =>
      repo.findConnection(workspaceId, id).pipe(orFailWith(() => connectionNotFound(id, "provider_connection_id")))

    const listRoutes = Effect.fn("Connections.listRoutes")(function* (workspaceId: string) {
      return (yield* repo.listRoutes(workspaceId)).map(toRoute)
    })

    const createRoute = Effect.fn("Connections.createRoute")(function* (
      workspaceId: string,
      input: {
        readonly agent_id: string
        readonly display_name: string
        readonly provider_connection_id: string
        readonly guardrails?: RouteGuardrailsInput | undefined
      }
    ) {
      yield* checkConnection(workspaceId, input.provider_connection_id)
      const inserted = yield* write(
        repo.insertRoute(
          {
            id: prefixedId("gwr"),
            workspace_id: workspaceId,
            agent_id: input.agent_id,
            display_name: input.display_name,
            provider_connection_id: input.provider_connection_id,
            // Screening is on unless a route says otherwise.
            guardrail_input: input.guardrails?.input ?? "enforce",
            guardrail_output: input.guardrails?.output ?? "enforce",
            guardrail_tool_calls: input.guardrails?.tool_calls ?? "enforce"
          },
          maxRoutes
        )
      )
      if (Option.isNone(inserted)) {
        return yield* capReached(
          "gateway_route_limit_reached",
          maxRoutes,
          "gateway routes",
          "MAX_GATEWAY_ROUTES_PER_WORKSPACE",
          REUSE
        )
      }
      return toRoute(inserted.value)
    })

    const updateRoute = Effect.fn("Connections.updateRoute")(function* (
      workspaceId: string,
      id: string,
      patch: {
        readonly agent_id?: string | undefined
        readonly display_name?: string | undefined
        readonly provider_connection_id?: string | undefined
        readonly guardrails?: RouteGuardrailsInput | undefined
      }
    ) {
      if (patch.provider_connection_id !== undefined) yield* checkConnection(workspaceId, patch.provider_connection_id)
      const { guardrails, ...rest } = patch
      const changes: RouteChanges = {
        ...Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined)),
        ...guardrailColumns(guardrails)
      }
      const row = yield* write(repo.updateRoute(workspaceId, id, changes)).pipe(orFailWith(() => routeNotFound(id)))
      // Once committed: a proxy call reading the route before then would otherwise cache the old one again.
      yield* targets.changed(workspaceId)
      return toRoute(row)
    })

    /** `target` from the cache alone (undefined when not cached). */
    const peekTarget = (workspaceId: string, routeId: string) => targets.peek(`${workspaceId}|${routeId}`)

    /** The route's upstream and decrypted key, for the proxy. */
    const target = (workspaceId: string, routeId: string) =>
      targets.get(`${workspaceId}|${routeId}`, loadTarget(workspaceId, routeId))

    const loadTarget = (workspaceId: string, routeId: string) =>
      repo.routeTarget(workspaceId, routeId).pipe(
        orFailWith(() => routeNotFound(routeId)),
        Effect.map((row): RouteTarget => ({
          routeId: row.route_id,
          agentId: row.agent_id,
          connectionId: row.connection_id,
          baseUrl: row.base_url,
          defaultModel: row.default_model,
          apiKey: cipher.decrypt(workspaceId, row.connection_id, row.encrypted_api_key),
          guardrails: guardrailsOf(row)
        }))
      )

    return {
      listConnections,
      createConnection,
      updateConnection,
      listRoutes,
      createRoute,
      updateRoute,
      target,
      peekTarget
    }
  }),
  dependencies: [GatewayRepo.Default, ProviderKeyCipher.Default, OutboundGuard.Default]
}) {}
