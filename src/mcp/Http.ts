/** Handlers of the MCP groups: the servers (CRUD) and the streamable HTTP endpoint (raw: answers JSON or SSE). */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { auditedWrites } from "../audit/Chain.js"
import { Agents } from "../catalog/Agents.js"
import { CurrentCaller, inWorkspace } from "../identity/Authentication.js"
import { pageSize } from "../platform/Schemas.js"
import { MAX_MCP_PAGE } from "./Api.js"
import { McpGateway } from "./Gateway.js"
import { McpServers } from "./Servers.js"
import { ToolPins } from "./ToolPins.js"

export const McpServersHttpLive = HttpApiBuilder.group(GuardrailApi, "mcpServers", (handlers) =>
  Effect.gen(function* () {
    const servers = yield* McpServers
    // A server's calls are decided for one agent: its profile must exist (404 agent_not_found), as for routes.
    const agents = yield* Agents
    const audited = yield* auditedWrites
    const pins = yield* ToolPins
    return (
      handlers
        .handle("listMcpServers", ({ urlParams }) =>
          inWorkspace((ws) => servers.list(ws, pageSize(urlParams.limit, MAX_MCP_PAGE), urlParams.cursor))
        )
        // Server writes are audited by the service (in a transaction opened after the url's check).
        .handle("createMcpServer", ({ payload }) =>
          inWorkspace((ws) =>
            Effect.zipRight(agents.requireRegistered(ws, payload.agent_id), servers.create(ws, payload))
          )
        )
        .handle("getMcpServer", ({ path }) => inWorkspace((ws) => servers.get(ws, path.id)))
        .handle("updateMcpServer", ({ path, payload }) =>
          inWorkspace((ws) =>
            Effect.zipRight(agents.requireRegistered(ws, payload.agent_id), servers.update(ws, path.id, payload))
          )
        )
        .handle("deleteMcpServer", ({ path }) => inWorkspace((ws) => servers.remove(ws, path.id)))
        .handle("listMcpToolPins", ({ path, urlParams }) =>
          inWorkspace((ws) =>
            Effect.zipRight(
              servers.get(ws, path.id),
              pins.list(
                ws,
                path.id,
                { limit: pageSize(urlParams.limit, MAX_MCP_PAGE), withheld: urlParams.withheld === "true" },
                urlParams.cursor
              )
            )
          )
        )
        .handle("acceptMcpToolPin", ({ path, payload }) =>
          audited(
            inWorkspace((ws) =>
              Effect.zipRight(servers.get(ws, path.id), pins.accept(ws, path.id, path.tool, payload.seen_digest))
            )
          )
        )
        .handle("deleteMcpToolPin", ({ path }) =>
          audited(inWorkspace((ws) => Effect.zipRight(servers.get(ws, path.id), pins.remove(ws, path.id, path.tool))))
        )
    )
  })
).pipe(Layer.provide([McpServers.Default, ToolPins.Default]))

export const McpProxyHttpLive = HttpApiBuilder.group(GuardrailApi, "mcpProxy", (handlers) =>
  Effect.gen(function* () {
    const gateway = yield* McpGateway
    return handlers
      .handleRaw("mcpMessage", ({ path, request }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentCaller
          // The request pipeline has read and parsed the JSON body already (within MAX_BODY_BYTES).
          const text = yield* Effect.orElseSucceed(request.text, () => "")
          const json = yield* Effect.orElseSucceed(request.json, () => null)
          return yield* gateway.message(caller, path.server_id, { text, json }, request.headers)
        })
      )
      .handleRaw("mcpStream", ({ path, request }) =>
        Effect.flatMap(CurrentCaller, (caller) => gateway.stream(caller, path.server_id, request.headers))
      )
      .handleRaw("mcpEndSession", ({ path, request }) =>
        Effect.flatMap(CurrentCaller, (caller) => gateway.endSession(caller, path.server_id, request.headers))
      )
  })
).pipe(Layer.provide(McpGateway.Default))
