/**
 * MCP servers of a workspace. Their request headers are encrypted (the
 * gateway's ProviderKeyCipher, bound to workspace and server id) before
 * they reach the repository, and leave this service only towards the
 * server itself (`target`), never in a response.
 */
import { Effect, Option, Redacted } from "effect"
import { auditedWrites } from "../audit/Chain.js"
import { BadRequest, NotFound } from "../http/Errors.js"
import { ProviderKeyCipher } from "../gateway/ProviderKeyCipher.js"
import { pageByTime } from "../platform/Cursor.js"
import { prefixedId } from "../platform/Ids.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { toTimestamp } from "../platform/Schemas.js"
import { orFailWith } from "../platform/Sql.js"
import { McpServer, McpServerId } from "./Domain.js"
import { McpRepo, type ServerChanges, type ServerRow } from "./Repo.js"
import { ToolPinsRepo } from "./ToolPinsRepo.js"

export const DEFAULT_RESULT_ORIGIN = "tool_output"

type HeaderMap = Readonly<Record<string, string>>

/** What the endpoint needs of a server: where to send, as which agent, and with which headers. */
export interface ServerTarget {
  readonly id: string
  readonly url: URL
  readonly agentId: string
  readonly resultOrigin: string
  /** None when stored headers cannot be decrypted with this service's key. */
  readonly headers: Option.Option<HeaderMap>
}

export const serverNotFound = (id: string) =>
  new NotFound({ code: "mcp_server_not_found", message: `MCP server ${id} does not exist in this workspace.` })

export class McpServers extends Effect.Service<McpServers>()("mcp/McpServers", {
  effect: Effect.gen(function* () {
    const repo = yield* McpRepo
    const cipher = yield* ProviderKeyCipher
    const outbound = yield* OutboundGuard
    const pins = yield* ToolPinsRepo
    // Writes run in a transaction attributed to the caller (the audit chain), opened only once the input is
    // checked: the url's check may wait seconds on DNS, which must not hold a pooled connection.
    const write = yield* auditedWrites

    /** https, or http to HTTP_URL_ALLOWLIST hosts; never an internal address unless allowlisted (docs/outbound.md). */
    const checkUrl = (value: string) =>
      Effect.gen(function* () {
        const url = yield* outbound.validateUrl(value, "url")
        if (url.hash !== "") {
          return yield* new BadRequest({
            code: "validation_failed",
            message: "url: expected a URL without fragment.",
            details: [{ path: "url", message: "expected a URL without fragment" }]
          })
        }
        return url.toString()
      })

    const decryptHeaders = (row: ServerRow): Option.Option<HeaderMap> => {
      if (row.encrypted_headers === null) return Option.some({})
      return Option.flatMap(cipher.decrypt(row.workspace_id, row.id, row.encrypted_headers), (text) => {
        try {
          return Option.some(JSON.parse(Redacted.value(text)) as HeaderMap)
        } catch {
          return Option.none()
        }
      })
    }

    const toServer = (row: ServerRow) =>
      new McpServer({
        id: McpServerId.make(row.id),
        display_name: row.display_name,
        url: row.url,
        agent_id: row.agent_id,
        result_origin: row.result_origin,
        header_names: row.header_names,
        headers_status:
          row.encrypted_headers === null ? "none" : Option.isSome(decryptHeaders(row)) ? "configured" : "unreadable",
        created_at: toTimestamp(row.created_at),
        updated_at: toTimestamp(row.updated_at)
      })

    /** The stored form of a header set: its names in the clear, the whole set encrypted (none when empty). */
    const sealHeaders = (workspaceId: string, id: string, headers: Redacted.Redacted<HeaderMap> | null) => {
      const value = headers === null ? {} : Redacted.value(headers)
      const names = Object.keys(value).sort()
      return {
        header_names: names,
        encrypted_headers:
          names.length === 0 ? null : cipher.encrypt(workspaceId, id, Redacted.make(JSON.stringify(value)))
      }
    }

    /** One page of the workspace's servers, newest first. */
    const list = Effect.fn("McpServers.list")(function* (
      workspaceId: string,
      limit: number,
      cursor: string | undefined
    ) {
      const { next, page } = yield* pageByTime(cursor, limit, (before) => repo.list(workspaceId, limit, before))
      return { mcp_servers: page.map(toServer), ...next }
    })

    const get = Effect.fn("McpServers.get")(function* (workspaceId: string, id: string) {
      return toServer(yield* repo.find(workspaceId, id).pipe(orFailWith(() => serverNotFound(id))))
    })

    const create = Effect.fn("McpServers.create")(function* (
      workspaceId: string,
      input: {
        readonly display_name: string
        readonly url: string
        readonly agent_id: string
        readonly result_origin?: string | undefined
        readonly headers?: Redacted.Redacted<HeaderMap> | undefined
      }
    ) {
      const url = yield* checkUrl(input.url)
      const id = prefixedId("mcps")
      const row = yield* write(
        repo.insert({
          id,
          workspace_id: workspaceId,
          display_name: input.display_name,
          url,
          agent_id: input.agent_id,
          result_origin: input.result_origin ?? DEFAULT_RESULT_ORIGIN,
          ...sealHeaders(workspaceId, id, input.headers ?? null)
        })
      )
      return toServer(row)
    })

    const update = Effect.fn("McpServers.update")(function* (
      workspaceId: string,
      id: string,
      patch: {
        readonly display_name?: string | undefined
        readonly url?: string | undefined
        readonly agent_id?: string | undefined
        readonly result_origin?: string | undefined
        readonly headers?: Redacted.Redacted<HeaderMap> | null | undefined
      }
    ) {
      const { headers, url, ...rest } = patch
      const checkedUrl = url === undefined ? undefined : yield* checkUrl(url)
      const changes: ServerChanges = {
        ...Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined)),
        ...(checkedUrl === undefined ? {} : { url: checkedUrl }),
        ...(headers === undefined ? {} : sealHeaders(workspaceId, id, headers))
      }
      // Another address is another server: its tools are pinned afresh when first listed (ToolPins.ts). One
      // transaction, the row locked first: the new address never stands with the old server's pins, and the
      // headers rule below reads the row the update changes. (A listing of the old address still in flight
      // may pin again; the new server's differing tools then show as changed: fail closed.)
      const row = yield* write(
        Effect.gen(function* () {
          const current = yield* repo.lock(workspaceId, id).pipe(orFailWith(() => serverNotFound(id)))
          // Stored credentials are never sent to a new address unless given again with it.
          if (url !== undefined && headers === undefined && current.encrypted_headers !== null) {
            return yield* new BadRequest({
              code: "validation_failed",
              message: "headers: required when url changes (send them again, or null to remove them).",
              details: [{ path: "headers", message: "required when url changes" }]
            })
          }
          const updated = yield* repo.update(workspaceId, id, changes).pipe(orFailWith(() => serverNotFound(id)))
          if (updated.url !== current.url) yield* pins.clear(workspaceId, id)
          return updated
        })
      )
      return toServer(row)
    })

    /**
     * The requests in flight to each server in this process (`workspace id` LF `server id`): deleting the
     * server ends them at once (Gateway.ts) instead of leaving them to its answer, which may never come.
     */
    const inFlight = new Map<string, Set<() => void>>()
    const flightKey = (workspaceId: string, id: string) => `${workspaceId}\n${id}`

    /** Runs `end` if the server is deleted (by this process) before the answered unwatch is called. */
    const watch = (workspaceId: string, id: string, end: () => void) => {
      const key = flightKey(workspaceId, id)
      const ends = inFlight.get(key) ?? new Set()
      inFlight.set(key, ends)
      ends.add(end)
      return () => {
        ends.delete(end)
        if (ends.size === 0 && inFlight.get(key) === ends) inFlight.delete(key)
      }
    }

    const remove = Effect.fn("McpServers.remove")(function* (workspaceId: string, id: string) {
      if (!(yield* write(repo.remove(workspaceId, id)))) return yield* serverNotFound(id)
      // Committed: what is still in flight to the server ends now.
      const key = flightKey(workspaceId, id)
      const ends = inFlight.get(key)
      inFlight.delete(key)
      for (const end of ends ?? []) end()
    })

    const target = Effect.fn("McpServers.target")(function* (workspaceId: string, id: string) {
      const row = yield* repo.find(workspaceId, id).pipe(orFailWith(() => serverNotFound(id)))
      return {
        id: row.id,
        url: new URL(row.url),
        agentId: row.agent_id,
        resultOrigin: row.result_origin,
        headers: decryptHeaders(row)
      } satisfies ServerTarget
    })

    return { list, get, create, update, remove, target, watch }
  }),
  dependencies: [McpRepo.Default, ToolPinsRepo.Default, ProviderKeyCipher.Default, OutboundGuard.Default]
}) {}
