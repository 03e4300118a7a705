/** The MCP gateway contract: the workspace's MCP servers, and the streamable HTTP endpoint agents connect to. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Authentication } from "../identity/Authentication.js"
import { CursorParam, LimitParam, NonEmptyIdentifier } from "../platform/Schemas.js"
import {
  AcceptMcpToolPin,
  CreateMcpServer,
  McpMessage,
  McpServer,
  McpServerId,
  McpToolPin,
  UpdateMcpServer
} from "./Domain.js"

const ServerPath = Schema.Struct({ id: McpServerId })
const ToolPinPath = Schema.Struct({ id: McpServerId, tool: NonEmptyIdentifier })
export const EndpointPath = Schema.Struct({ server_id: McpServerId })
const Page = Schema.Struct({ limit: Schema.optional(LimitParam()), cursor: Schema.optional(CursorParam) })
const nextCursor = Schema.optional(Schema.String)
const PinsPage = Schema.Struct({
  ...Page.fields,
  withheld: Schema.optional(
    Schema.Literal("true", "false").annotations({
      description: "true: only the pins not callable (changed or poisoned)"
    })
  )
})

/** The most servers, and pins, one page holds (a page of pins may end earlier: each carries its definition). */
export const MAX_MCP_PAGE = 100

export class McpServersApi extends HttpApiGroup.make("mcpServers")
  .add(
    HttpApiEndpoint.get("listMcpServers", "/mcp/servers")
      .setUrlParams(Page)
      .addSuccess(Schema.Struct({ mcp_servers: Schema.Array(McpServer), next_cursor: nextCursor }))
      .annotate(
        OpenApi.Description,
        `Newest first, ${MAX_MCP_PAGE} a page at most (default 50); next_cursor (extension) pages further.`
      )
  )
  .add(
    HttpApiEndpoint.post("createMcpServer", "/mcp/servers")
      .setPayload(CreateMcpServer)
      .addSuccess(McpServer, { status: 201 })
  )
  .add(HttpApiEndpoint.get("getMcpServer", "/mcp/servers/:id").setPath(ServerPath).addSuccess(McpServer))
  .add(
    HttpApiEndpoint.patch("updateMcpServer", "/mcp/servers/:id")
      .setPath(ServerPath)
      .setPayload(UpdateMcpServer)
      .addSuccess(McpServer)
  )
  .add(
    HttpApiEndpoint.del("deleteMcpServer", "/mcp/servers/:id").setPath(ServerPath).addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    HttpApiEndpoint.get("listMcpToolPins", "/mcp/servers/:id/tools")
      .setPath(ServerPath)
      .setUrlParams(PinsPage)
      .addSuccess(Schema.Struct({ tools: Schema.Array(McpToolPin), next_cursor: nextCursor }))
      .annotate(
        OpenApi.Description,
        `By tool name, ${MAX_MCP_PAGE} a page at most (default 50), ending early after the pin whose definition brings it to 4 MiB of JSON; next_cursor (extension) pages further.`
      )
  )
  .add(
    HttpApiEndpoint.post("acceptMcpToolPin", "/mcp/servers/:id/tools/:tool/accept")
      .setPath(ToolPinPath)
      .setPayload(AcceptMcpToolPin)
      .addSuccess(McpToolPin)
  )
  .add(
    HttpApiEndpoint.del("deleteMcpToolPin", "/mcp/servers/:id/tools/:tool")
      .setPath(ToolPinPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Upstream MCP servers; their request headers are write-only. Each tool's definition is pinned when first listed: a changed one is withheld until accepted."
  ) {}

export class McpProxyApi extends HttpApiGroup.make("mcpProxy")
  .add(
    HttpApiEndpoint.post("mcpMessage", "/mcp/:server_id")
      .setPath(EndpointPath)
      .setPayload(McpMessage)
      .addSuccess(McpMessage)
  )
  .add(HttpApiEndpoint.get("mcpStream", "/mcp/:server_id").setPath(EndpointPath).addSuccess(McpMessage))
  .add(
    HttpApiEndpoint.del("mcpEndSession", "/mcp/:server_id").setPath(EndpointPath).addSuccess(HttpApiSchema.NoContent)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "MCP streamable HTTP endpoint of a server: JSON-RPC over POST (answers application/json or text/event-stream), GET for the server's event stream (or, with Last-Event-ID, the rest of a stream relayed before), DELETE to end the session. Tool calls, tool results, read resources, fetched prompts, and the server's sampling and elicitation requests (and the client's answers) are decided like POST /v1/events."
  ) {}
