/**
 * The MCP endpoint: one JSON-RPC message from an agent through to its MCP
 * server, over the MCP streamable HTTP transport.
 *
 * Messages go upstream as sent, with the server's own headers and the
 * client's `Mcp-Session-Id` / `MCP-Protocol-Version`; the server's
 * `Mcp-Session-Id` comes back as it is (the gateway keeps no session state:
 * the id is only ever sent to the server that issued it). These messages
 * are screened:
 * - `tools/call` is decided before it goes out, like `POST /v1/events` of
 *   kind `output.proposed` (agent: the server's `agent_id`, operation: the
 *   tool, params: its arguments, session: the MCP session); anything but
 *   `permit` answers a tool error result and the server is not called;
 * - its result is decided as kind `tool.result` (content: its text items)
 *   and passed, rewritten or withheld;
 * - `tools/list` answers without the tools disabled in tool metadata;
 * - what the server asks of the client (`sampling/createMessage`,
 *   `elicitation/create`) is decided like a tool result: passed, rewritten,
 *   or withheld, the gateway then answering the server with an error.
 * The outbound guard, upstream timeout, stream limits and per-key/workspace
 * stream slots are the LLM gateway's.
 */
import { type Headers, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option, Runtime, Schema } from "effect"
import { Authorization, type ProposedEventInput } from "../authorization/Authorization.js"
import { CatalogRepo } from "../catalog/Repo.js"
import { upstreamFailure } from "../gateway/Calls.js"
import { StreamSlots } from "../gateway/StreamSlots.js"
import {
  isUpstreamFailure,
  sendUpstream,
  type UpstreamFailure,
  type UpstreamResponse,
  UpstreamUnreachable
} from "../gateway/Upstream.js"
import type { RawBody } from "../http/Hot.js"
import { BadGateway, Conflict, schemaRefusal } from "../http/Errors.js"
import type { Caller } from "../identity/Authentication.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { AppConfig } from "../platform/Config.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { JsonRpcMessage, ToolCallParams } from "./Domain.js"
import { respond, type Screen } from "./Answer.js"
import type { Verdict } from "./Relay.js"
import {
  asObject,
  callRefusal,
  disabledToolResult,
  errorMessage,
  listedTools,
  resultMessage,
  screenedResult,
  textOf,
  unscreenedResult
} from "./Screening.js"
import { McpServers, type ServerTarget } from "./Servers.js"
import { ANSWER_ACCEPT, badRequest, sessionOf, upstreamHeaders } from "./SessionHeaders.js"
import {
  requestSource,
  requestText,
  rewrittenRequest,
  type ServerRequest,
  serverRequestOf,
  withheldAnswer,
  withheldReason
} from "./ServerRequests.js"

const keepAll: Screen = () => Effect.succeed("keep")

/** The response `message` answers, when it is the response to request `id` with a result. */
const resultFor = (message: unknown, id: string | number) => {
  const object = asObject(message)
  return object !== undefined && object["id"] === id ? asObject(object["result"]) : undefined
}

const jsonAnswer = (body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status: 200, headers })

/** Why a screening decision could not be made, for the notice that replaces what it screened. */
const whyUndecided = (cause: Cause.Cause<{ readonly message: string }>) =>
  Option.match(Cause.failureOption(cause), {
    onNone: () => "the decision failed",
    onSome: (error) => error.message
  })

export class McpGateway extends Effect.Service<McpGateway>()("mcp/McpGateway", {
  effect: Effect.gen(function* () {
    const servers = yield* McpServers
    const authorization = yield* Authorization
    const catalog = yield* CatalogRepo
    const settings = yield* WorkspaceSettings
    const slots = yield* StreamSlots
    const config = yield* AppConfig
    const connectGuard = (yield* OutboundGuard).connectOptions
    const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())
    const limits = {
      maxStreamMillis: config.gatewayMaxStreamSeconds * 1000,
      maxEventBytes: config.gatewaySseMaxLineBytes
    }

    const call = (url: URL, headers: Record<string, string>, body: Uint8Array, method: "POST" | "GET" | "DELETE") =>
      Effect.async<UpstreamResponse, UpstreamFailure>((resume) => {
        try {
          const abort = sendUpstream(
            url,
            headers,
            body,
            config.gatewayUpstreamTimeoutMillis,
            connectGuard,
            (result) => resume(isUpstreamFailure(result) ? Effect.fail(result) : Effect.succeed(result)),
            method
          )
          return Effect.sync(abort)
        } catch (error) {
          // node:http refuses a request it cannot send (e.g. a header value it rejects): the server is unreachable.
          resume(
            Effect.fail(new UpstreamUnreachable({ reason: error instanceof Error ? error.message : String(error) }))
          )
          return Effect.void
        }
      }).pipe(
        Effect.mapError((failure) =>
          upstreamFailure(failure, { status: null, error: null, ended: false }, "The MCP server")
        )
      )

    /** The server and its decrypted headers (502 when this service cannot decrypt them). */
    const targetOf = (caller: Caller, serverId: string) =>
      Effect.flatMap(servers.target(caller.workspaceId, serverId), (target) =>
        Option.match(target.headers, {
          onNone: () =>
            Effect.fail(
              new BadGateway({
                code: "mcp_headers_unreadable",
                message:
                  "The headers of this MCP server cannot be decrypted by this service; set them again with PATCH /v1/mcp/servers/{id}."
              })
            ),
          onSome: (headers) => Effect.succeed({ target, headers })
        })
      )

    const environmentOf = (caller: Caller) =>
      caller.environmentId !== null
        ? Effect.succeed(caller.environmentId)
        : Effect.flatMap(settings.runtimeConfig(caller.workspaceId), (runtime) => {
            const entries = [...runtime.environments]
            const found = (entries.find(([, environment]) => environment.isDefault) ?? entries[0])?.[0]
            return found === undefined
              ? Effect.fail(new Conflict({ code: "no_environment", message: "This workspace has no environment." }))
              : Effect.succeed(found)
          })

    /** The decision of one event of the MCP session, as `POST /v1/events` would make it. */
    const decide = (
      caller: Caller,
      target: ServerTarget,
      environmentId: string,
      session: string | undefined,
      kind: ProposedEventInput["kind"],
      action: ProposedEventInput["action"]
    ) =>
      authorization.authorize(caller, {
        kind,
        principal: { agent_id: target.agentId, environment_id: environmentId, workspace_id: caller.workspaceId },
        action,
        ...(session === undefined ? {} : { session_id: session }),
        metadata: { source: "mcp", mcp_server_id: target.id }
      })

    /** Screens the result of `tool` (the response to request `id`) as a `tool.result` event. */
    const resultScreen =
      (
        caller: Caller,
        target: ServerTarget,
        environmentId: string,
        session: string | undefined,
        id: string | number,
        tool: string,
        origin: string
      ): Screen =>
      (message) => {
        const result = resultFor(message, id)
        if (result === undefined) return Effect.succeed("keep")
        const action = {
          operation: tool,
          content: textOf(result),
          sources: [{ path: "content", origin, source_id: `mcp:${target.id}/${tool}` }]
        }
        return decide(caller, target, environmentId, session, "tool.result", action).pipe(
          Effect.map((answer): Verdict => {
            const screened = screenedResult(tool, result, answer)
            return screened === undefined ? "keep" : { replace: resultMessage(id, screened) }
          }),
          // Fail closed: a result that cannot be decided (too large, decision refused) is withheld.
          Effect.catchAllCause((cause) =>
            Effect.succeed<Verdict>({ replace: resultMessage(id, unscreenedResult(tool, whyUndecided(cause))) })
          )
        )
      }

    /**
     * `screen`, with what the server asks of the client decided first as its tool results are: a request
     * withheld (deny, defer, or undecidable: fail closed) is answered to the server with an error on the
     * client's behalf, so the server does not wait for an answer that never comes.
     */
    const withServerRequests =
      (
        caller: Caller,
        target: ServerTarget,
        upstreamHeaders: Record<string, string>,
        session: string | undefined,
        screen: Screen
      ): Screen =>
      (message) => {
        const request = serverRequestOf(message)
        if (request === undefined) return screen(message)
        const answerServer = (why: string) =>
          call(
            target.url,
            upstreamHeaders,
            Buffer.from(JSON.stringify(withheldAnswer(request, why)), "utf8"),
            "POST"
          ).pipe(
            Effect.map((upstream) => upstream.abort()),
            Effect.catchAll((error) =>
              Effect.logWarning("the MCP server could not be told that its request was withheld", error.message)
            ),
            Effect.as<Verdict>("drop")
          )
        return decideServerRequest(caller, target, session, request).pipe(
          Effect.flatMap((answer) => {
            if (answer.effect === "permit") return Effect.succeed<Verdict>("keep")
            if (answer.effect === "rewrite")
              return Effect.succeed<Verdict>({ replace: rewrittenRequest(request, answer.transformed_value ?? "") })
            return answerServer(withheldReason(answer))
          }),
          Effect.catchAllCause((cause) => answerServer(`it could not be screened (${whyUndecided(cause)}).`))
        )
      }

    const decideServerRequest = (
      caller: Caller,
      target: ServerTarget,
      session: string | undefined,
      request: ServerRequest
    ) =>
      Effect.flatMap(environmentOf(caller), (environmentId) =>
        decide(caller, target, environmentId, session, "tool.result", {
          operation: request.method,
          content: requestText(request),
          sources: [
            { path: "content", origin: target.resultOrigin, source_id: `mcp:${target.id}/${requestSource(request)}` }
          ]
        })
      )

    /** Holds a stream slot (the LLM gateway's per-key and per-workspace caps) for one upstream call. */
    const takeSlot = (caller: Caller) =>
      Effect.suspend(() => {
        const release = slots.tryTake(caller)
        if (release === undefined) return Effect.fail(slots.refusal(caller))
        let released = false
        return Effect.succeed(() => {
          if (!released) {
            released = true
            release()
          }
        })
      })

    /** `POST /v1/mcp/{server_id}`: one JSON-RPC message. */
    const message = Effect.fn("McpGateway.message")(function* (
      caller: Caller,
      serverId: string,
      body: RawBody,
      incoming: Headers.Headers
    ) {
      const { target, headers } = yield* targetOf(caller, serverId)
      if (Array.isArray(body.json))
        return yield* badRequest("body", "expected one JSON-RPC message (batches are not supported)")
      const rpc = yield* Schema.decodeUnknown(JsonRpcMessage)(body.json).pipe(Effect.mapError(schemaRefusal))
      const { session, forwarded } = yield* sessionOf(incoming)
      const id = rpc.id
      let screen = keepAll
      if (rpc.method === "tools/list" && id !== undefined) {
        const rows = yield* Effect.orDie(catalog.listToolMetadata(caller.workspaceId))
        const hidden = new Set(rows.filter((row) => !row.enabled).map((row) => row.tool))
        screen = (message) => {
          const result = resultFor(message, id)
          return Effect.succeed(
            result === undefined ? "keep" : { replace: resultMessage(id, listedTools(result, hidden)) }
          )
        }
      } else if (rpc.method === "tools/call" && id !== undefined) {
        const params = yield* Schema.decodeUnknown(ToolCallParams)(asObject(body.json)?.["params"]).pipe(
          Effect.mapError(schemaRefusal)
        )
        const tool = params.name
        const metadata = yield* Effect.orDie(catalog.findToolMetadata(caller.workspaceId, tool))
        if (Option.isSome(metadata) && !metadata.value.enabled)
          return jsonAnswer(resultMessage(id, disabledToolResult(tool)))
        const environmentId = yield* environmentOf(caller)
        const answer = yield* decide(caller, target, environmentId, session, "output.proposed", {
          operation: tool,
          params: params.arguments ?? {}
        })
        if (answer.effect !== "permit") return jsonAnswer(resultMessage(id, callRefusal(tool, answer)))
        // The tool's own result_origin (tool metadata) wins over the server's.
        const own = Option.flatMap(metadata, (row) => Option.fromNullable(asObject(row.metadata)?.["result_origin"]))
        const origin = Option.isSome(own) && typeof own.value === "string" ? own.value : target.resultOrigin
        screen = resultScreen(caller, target, environmentId, session, id, tool, origin)
      }
      const release = yield* takeSlot(caller)
      const accept = incoming["accept"] ?? "application/json, text/event-stream"
      const upstream = yield* call(
        target.url,
        upstreamHeaders(headers, forwarded, accept),
        Buffer.from(body.text, "utf8"),
        "POST"
      ).pipe(Effect.tapError(() => Effect.sync(release)))
      const ending = (reason: string) => (id === undefined ? undefined : errorMessage(id, -32603, reason))
      const answers = upstreamHeaders(headers, forwarded, ANSWER_ACCEPT)
      const screened = withServerRequests(caller, target, answers, session, screen)
      return yield* respond(upstream, screened, ending, release, limits, runPromise)
    })

    /** `GET /v1/mcp/{server_id}`: the server's own event stream, when it offers one. */
    const stream = Effect.fn("McpGateway.stream")(function* (
      caller: Caller,
      serverId: string,
      incoming: Headers.Headers
    ) {
      const { target, headers } = yield* targetOf(caller, serverId)
      const { forwarded, session } = yield* sessionOf(incoming)
      const release = yield* takeSlot(caller)
      const upstream = yield* call(
        target.url,
        upstreamHeaders(headers, forwarded, "text/event-stream"),
        new Uint8Array(0),
        "GET"
      ).pipe(Effect.tapError(() => Effect.sync(release)))
      // Responses could only come here on a resumed request stream; unscreened, they are never passed on.
      const dropResponses: Screen = (message) => {
        const object = asObject(message)
        return Effect.succeed(object !== undefined && ("result" in object || "error" in object) ? "drop" : "keep")
      }
      const answers = upstreamHeaders(headers, forwarded, ANSWER_ACCEPT)
      const screen = withServerRequests(caller, target, answers, session, dropResponses)
      return yield* respond(upstream, screen, () => undefined, release, limits, runPromise)
    })

    /** `DELETE /v1/mcp/{server_id}`: ends the session at the server. */
    const endSession = Effect.fn("McpGateway.endSession")(function* (
      caller: Caller,
      serverId: string,
      incoming: Headers.Headers
    ) {
      const { target, headers } = yield* targetOf(caller, serverId)
      const { forwarded } = yield* sessionOf(incoming)
      const upstream = yield* call(
        target.url,
        upstreamHeaders(headers, forwarded, "application/json"),
        new Uint8Array(0),
        "DELETE"
      )
      upstream.abort()
      const status =
        upstream.status >= 200 && upstream.status < 300 ? 204 : upstream.status >= 500 ? 502 : upstream.status
      return HttpServerResponse.empty({ status })
    })

    return { message, stream, endSession }
  }),
  dependencies: [McpServers.Default, StreamSlots.Default, OutboundGuard.Default]
}) {}
