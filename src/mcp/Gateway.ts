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
 *   and passed, rewritten or withheld, as are the answers of
 *   `resources/read` and `prompts/get` (ContentResults.ts);
 * - `tools/list` answers without the tools disabled in tool metadata, and
 *   without the tools whose definition changed since it was pinned or whose
 *   description is poisoned; those are not callable either (ToolPins.ts);
 * - what the server asks of the client (`sampling/createMessage`,
 *   `elicitation/create`) is decided like a tool result, and the client's
 *   answer like what the agent sends out (ServerRequestScreen.ts);
 * - each SSE event id is the gateway's own, so a stream resumes with
 *   `Last-Event-ID` and is screened as it began (EventIds.ts).
 * The outbound guard, upstream timeout, stream limits and per-key/workspace
 * stream slots are the LLM gateway's.
 */
import type * as Headers from "@effect/platform/Headers"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Exit, Option, Runtime, Schema } from "effect"
import { Authorization, type ProposedEventInput } from "../authorization/Authorization.js"
import type { DecisionAnswer } from "../authorization/Decisions.js"
import { CatalogRepo } from "../catalog/Repo.js"
import { StreamSlots } from "../gateway/StreamSlots.js"
import type { UpstreamResponse } from "../gateway/Upstream.js"
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
  resultMessage,
  screenedResult,
  textOf,
  unscreenedResult
} from "./Screening.js"
import { McpServers, type ServerTarget } from "./Servers.js"
import { makeEventIds, type StreamContext } from "./EventIds.js"
import { callInFlight, type Flight, makeUpstreamCall, takeFlight } from "./UpstreamCall.js"
import { McpRepo } from "./Repo.js"
import { makeToolListScreen } from "./ToolListScreen.js"
import { pinnedCallRefusal, ToolPins } from "./ToolPins.js"
import { Secrets } from "../platform/Secrets.js"
import { ANSWER_ACCEPT, badRequest, sessionOf, upstreamHeaders } from "./SessionHeaders.js"
import { clientAnswerOf } from "./ServerRequests.js"
import {
  type ContentMethod,
  contentSource,
  contentText,
  isContentMethod,
  screenedContent,
  unscreenedContent
} from "./ContentResults.js"
import { type DecideEvent, makeServerRequestScreening, whyUndecided } from "./ServerRequestScreen.js"
import { dropResponses, keepAll, ownResponseOnly, resultFor, toolResultFor } from "./Responses.js"
import { outgoingAction, outgoingRefusal } from "./OutgoingRequests.js"

const jsonAnswer = (body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status: 200, headers })

export class McpGateway extends Effect.Service<McpGateway>()("mcp/McpGateway", {
  effect: Effect.gen(function* () {
    const servers = yield* McpServers
    const authorization = yield* Authorization
    const catalog = yield* CatalogRepo
    const settings = yield* WorkspaceSettings
    const slots = yield* StreamSlots
    const config = yield* AppConfig
    const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())
    const limits = {
      maxStreamMillis: config.gatewayMaxStreamSeconds * 1000,
      maxEventBytes: config.gatewaySseMaxLineBytes
    }

    const call = makeUpstreamCall(config.gatewayUpstreamTimeoutMillis, (yield* OutboundGuard).connectOptions)
    const eventIds = makeEventIds((yield* Secrets).jwtSecret)

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
    const decide: DecideEvent = (caller, target, session, kind, action) =>
      Effect.flatMap(environmentOf(caller), (environmentId) =>
        authorization.authorize(caller, {
          kind,
          principal: { agent_id: target.agentId, environment_id: environmentId, workspace_id: caller.workspaceId },
          action,
          ...(session === undefined ? {} : { session_id: session }),
          metadata: { source: "mcp", mcp_server_id: target.id }
        })
      )

    const serverRequests = makeServerRequestScreening({ call, decide })
    const pins = yield* ToolPins
    const toolListScreen = makeToolListScreen({ decide, pins, disabledTools: (yield* McpRepo).disabledTools })

    /**
     * Screens the answer to request `id` as a `tool.result` event (`action` of its result): `screened` says
     * what replaces the message after the decision (undefined: kept), `unscreened` what replaces it when no
     * decision can be made (fail closed: too large, decision refused).
     */
    const answerScreen =
      (
        caller: Caller,
        target: ServerTarget,
        session: string | undefined,
        id: string | number,
        answer: {
          /** The result the message carries for `id` (default: a response's `result`). */
          readonly resultOf?: typeof resultFor
          readonly action: (result: Record<string, unknown>) => ProposedEventInput["action"]
          readonly screened: (result: Record<string, unknown>, decision: DecisionAnswer) => unknown
          readonly unscreened: (why: string) => unknown
        }
      ): Screen =>
      (message) => {
        const result = (answer.resultOf ?? resultFor)(message, id)
        if (result === undefined) return Effect.succeed("keep")
        return decide(caller, target, session, "tool.result", answer.action(result)).pipe(
          Effect.map((decision): Verdict => {
            const screened = answer.screened(result, decision)
            return screened === undefined ? "keep" : { replace: screened }
          }),
          Effect.catchAllCause((cause) =>
            Effect.logWarning("MCP answer withheld: it could not be screened", cause).pipe(
              Effect.as<Verdict>({ replace: answer.unscreened(whyUndecided(cause)) })
            )
          )
        )
      }

    /** A tool's result, its origin the tool's (or the server's). */
    const resultScreen = (
      caller: Caller,
      target: ServerTarget,
      session: string | undefined,
      id: string | number,
      tool: string,
      origin: string
    ) =>
      answerScreen(caller, target, session, id, {
        resultOf: toolResultFor,
        action: (result) => ({
          operation: tool,
          content: textOf(result),
          sources: [{ path: "content", origin, source_id: `mcp:${target.id}/${tool}` }]
        }),
        screened: (result, decision) => {
          const screened = screenedResult(tool, result, decision)
          return screened === undefined ? undefined : resultMessage(id, screened)
        },
        unscreened: (why) => resultMessage(id, unscreenedResult(tool, why))
      })

    /** A read resource or a fetched prompt, its origin the server's. */
    const contentScreen = (
      caller: Caller,
      target: ServerTarget,
      session: string | undefined,
      id: string | number,
      method: ContentMethod
    ) =>
      answerScreen(caller, target, session, id, {
        action: (result) => ({
          operation: method,
          content: contentText(method, result),
          sources: [
            { path: "content", origin: target.resultOrigin, source_id: `mcp:${target.id}/${contentSource(method)}` }
          ]
        }),
        screened: (result, decision) => screenedContent(method, id, result, decision),
        unscreened: (why) => unscreenedContent(method, id, why)
      })

    /** What becomes of the messages of a stream answering `context` (a request's, or a resumed one). */
    const screenOf = (caller: Caller, target: ServerTarget, session: string | undefined, context: StreamContext) =>
      Effect.gen(function* () {
        const id = context.request_id
        if (id === undefined) return dropResponses
        if (context.method === "tools/call")
          return resultScreen(caller, target, session, id, context.tool ?? "", context.origin ?? target.resultOrigin)
        if (isContentMethod(context.method)) return contentScreen(caller, target, session, id, context.method)
        if (context.method !== "tools/list") return keepAll
        return yield* toolListScreen(caller, target, session, id, yield* environmentOf(caller))
      })

    /** Relays the server's answer to a stream of `context`: screened, with resumable event ids. */
    const relay = (
      caller: Caller,
      server: { readonly target: ServerTarget; readonly headers: Readonly<Record<string, string>> },
      client: { readonly session: string | undefined; readonly forwarded: Record<string, string> },
      context: StreamContext,
      upstream: UpstreamResponse,
      flight: Flight
    ) =>
      Effect.gen(function* () {
        const { target } = server
        const own = yield* screenOf(caller, target, client.session, context)
        const screen = context.request_id === undefined ? own : ownResponseOnly(context.request_id, own)
        const channel = { target, headers: upstreamHeaders(server.headers, client.forwarded, ANSWER_ACCEPT) }
        const screened = serverRequests.withServerRequests(caller, channel, client.session, screen)
        const id = context.request_id
        const ending = (reason: string) => (id === undefined ? undefined : errorMessage(id, -32603, reason))
        const binding = { workspaceId: caller.workspaceId, serverId: target.id, session: client.session ?? "" }
        const eventId = (event: string) => eventIds.issue(binding, context, event)
        return yield* respond(upstream, screened, ending, flight.release, limits, runPromise, eventId, flight.stop)
      }).pipe(
        // Failed, or interrupted (the client gone) before the answer was built: the upstream request ends too.
        Effect.onExit((exit) =>
          Effect.sync(() => {
            if (Exit.isSuccess(exit)) return
            upstream.abort()
            flight.release()
          })
        )
      )

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
      // A tool call (or a read, or a prompt's arguments) is decided before it goes out; sent as a notification
      // (no id) it would reach the server undecided, and a server lenient about JSON-RPC runs it all the same.
      const outgoing = outgoingAction(rpc.method, body.json)
      if ((rpc.method === "tools/call" || outgoing !== undefined) && rpc.id === undefined)
        return yield* badRequest("id", `a ${rpc.method} needs an id (it is decided before it reaches the server)`)
      const client = yield* sessionOf(incoming)
      const { session, forwarded } = client
      let sent = body.text
      const clientAnswer = rpc.method === undefined ? clientAnswerOf(body.json) : undefined
      if (clientAnswer !== undefined) {
        const channel = { target, headers: upstreamHeaders(headers, forwarded, ANSWER_ACCEPT) }
        const passed = yield* serverRequests.screenClientAnswer(caller, channel, session, clientAnswer, sent)
        // Withheld: the server has the gateway's error instead; the client is answered as a server accepts an answer.
        if (Option.isNone(passed)) return HttpServerResponse.empty({ status: 202 })
        sent = passed.value
      }
      const id = rpc.id
      let context: StreamContext = id === undefined ? { method: "other" } : { method: "other", request_id: id }
      if ((rpc.method === "tools/list" || isContentMethod(rpc.method)) && id !== undefined) {
        if (outgoing !== undefined) {
          const answer = yield* decide(caller, target, session, "output.proposed", outgoing)
          if (answer.effect !== "permit") return jsonAnswer(outgoingRefusal(id, outgoing.operation, answer))
        }
        context = { method: rpc.method, request_id: id }
      } else if (rpc.method === "tools/call" && id !== undefined) {
        const params = yield* Schema.decodeUnknown(ToolCallParams)(asObject(body.json)?.["params"]).pipe(
          Effect.mapError(schemaRefusal)
        )
        const tool = params.name
        const [metadata, pin] = yield* Effect.all(
          [
            Effect.orDie(catalog.findToolMetadata(caller.workspaceId, tool)),
            pins.find(caller.workspaceId, target.id, tool)
          ],
          { concurrency: 2 }
        )
        if (Option.isSome(metadata) && !metadata.value.enabled)
          return jsonAnswer(resultMessage(id, disabledToolResult(tool)))
        // A tool left out of the list (changed since approved, or poisoned) is not callable by name either.
        const withheld = pinnedCallRefusal(tool, pin)
        if (withheld !== undefined) return jsonAnswer(resultMessage(id, withheld))
        const answer = yield* decide(caller, target, session, "output.proposed", {
          operation: tool,
          params: params.arguments ?? {}
        })
        if (answer.effect !== "permit") return jsonAnswer(resultMessage(id, callRefusal(tool, answer)))
        // The tool's own result_origin (tool metadata) wins over the server's.
        const own = Option.flatMap(metadata, (row) => Option.fromNullable(asObject(row.metadata)?.["result_origin"]))
        const origin = Option.isSome(own) && typeof own.value === "string" ? own.value : target.resultOrigin
        context = { method: "tools/call", request_id: id, tool, origin }
      }
      const flight = yield* takeFlight(slots, servers.watch, caller, target)
      const accept = incoming["accept"] ?? "application/json, text/event-stream"
      const upstream = yield* callInFlight(
        flight,
        call(target.url, upstreamHeaders(headers, forwarded, accept), Buffer.from(sent, "utf8"), "POST")
      )
      return yield* relay(caller, { target, headers }, client, context, upstream, flight)
    })

    /**
     * `GET /v1/mcp/{server_id}`: the server's own event stream, when it offers one, or with `Last-Event-ID`
     * the rest of a stream this gateway relayed before (its id says how that stream is screened).
     */
    const stream = Effect.fn("McpGateway.stream")(function* (
      caller: Caller,
      serverId: string,
      incoming: Headers.Headers
    ) {
      const { target, headers } = yield* targetOf(caller, serverId)
      const { forwarded, session } = yield* sessionOf(incoming)
      let context: StreamContext = { method: "stream" }
      const lastEventId = incoming["last-event-id"]
      if (lastEventId !== undefined) {
        const binding = { workspaceId: caller.workspaceId, serverId: target.id, session: session ?? "" }
        const resumed = eventIds.read(binding, lastEventId)
        if (Option.isNone(resumed))
          return yield* badRequest("Last-Event-ID", "not an event id this gateway gave for this server and session")
        context = resumed.value.context
        forwarded["last-event-id"] = resumed.value.event
      }
      const flight = yield* takeFlight(slots, servers.watch, caller, target)
      const upstream = yield* callInFlight(
        flight,
        call(target.url, upstreamHeaders(headers, forwarded, "text/event-stream"), new Uint8Array(0), "GET")
      )
      return yield* relay(caller, { target, headers }, { session, forwarded }, context, upstream, flight)
    })

    /** `DELETE /v1/mcp/{server_id}`: ends the session at the server. */
    const endSession = Effect.fn("McpGateway.endSession")(function* (
      caller: Caller,
      serverId: string,
      incoming: Headers.Headers
    ) {
      const { target, headers } = yield* targetOf(caller, serverId)
      const { forwarded } = yield* sessionOf(incoming)
      // A request in flight like any other: it holds a slot until the server has answered.
      const flight = yield* takeFlight(slots, servers.watch, caller, target)
      const upstream = yield* callInFlight(
        flight,
        call(target.url, upstreamHeaders(headers, forwarded, "application/json"), new Uint8Array(0), "DELETE")
      ).pipe(Effect.ensuring(Effect.sync(flight.release)))
      upstream.abort()
      const status =
        upstream.status >= 200 && upstream.status < 300 ? 204 : upstream.status >= 500 ? 502 : upstream.status
      return HttpServerResponse.empty({ status })
    })

    return { message, stream, endSession }
  }),
  dependencies: [McpServers.Default, McpRepo.Default, ToolPins.Default, StreamSlots.Default, OutboundGuard.Default]
}) {}
