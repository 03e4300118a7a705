/**
 * What becomes of an MCP request while things change under it, and of
 * messages that would slip past the call's decision:
 * - a request in flight when its server is deleted ends at once: 404
 *   `mcp_server_not_found` before the answer has begun, the request's
 *   JSON-RPC error in an event stream already relayed; the server's
 *   answer is not waited for (it may never come);
 * - a `tools/call` without an id (a notification) is refused: it would
 *   reach the server undecided, and a lenient server runs it all the same;
 * - an event stream that breaks off before answering, with no event id the
 *   client could resume from, ends with the request's error (the client
 *   would otherwise wait for an answer that cannot come);
 * - a message naming a key twice is refused (decided with the last, it
 *   would reach a server that may keep the first);
 * - a server whose agent was deleted decides as a gateway route does: for
 *   an unregistered agent (the `agent.registered` finding, the workspace's
 *   default action).
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { call, request } from "../support/Raw.js"
import { until } from "../support/Eventually.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { MAX_SERVER_REQUESTS_PER_STREAM } from "../../src/mcp/ServerRequestScreen.js"
import { AGENT, mcpTenant, postMessage, rawLookupCall } from "./mcp-helpers.js"

interface Received {
  readonly path: string
  readonly body: string
}

const received: Array<Received> = []
/** Responses held open by the stub: ended (or destroyed) when a test is done with them. */
const held = new Set<ServerResponse>()

const answerFor = (body: string) => {
  const sent = JSON.parse(body) as { readonly id?: number }
  return JSON.stringify({ jsonrpc: "2.0", id: sent.id, result: { content: [{ type: "text", text: "ok" }] } })
}

/** `/head`: no answer at all; `/sse`: an event stream that stays open; `/json`: half a JSON answer; `/break`: a stream cut. */
const stub = createServer((incoming: IncomingMessage, response: ServerResponse) => {
  const chunks: Array<Buffer> = []
  incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
  incoming.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8")
    const path = incoming.url ?? ""
    received.push({ path, body })
    if (path === "/head") {
      held.add(response)
    } else if (path === "/sse") {
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write(": working\n\n")
      held.add(response)
    } else if (path === "/json") {
      response.writeHead(200, { "content-type": "application/json" })
      response.write('{"jsonrpc":"2.0",')
      held.add(response)
    } else if (path === "/repeat") {
      // The request's response, three times over.
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.end(`event: message\ndata: ${answerFor(body)}\n\n`.repeat(3))
    } else if (path === "/spam") {
      // More sampling requests than one stream decides, then the response.
      const ask = (index: number) =>
        JSON.stringify({
          jsonrpc: "2.0",
          id: `ask-${index}`,
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: { type: "text", text: `question ${index}` } }], maxTokens: 5 }
        })
      response.writeHead(200, { "content-type": "text/event-stream" })
      for (let index = 0; index < MAX_SERVER_REQUESTS_PER_STREAM + 20; index++)
        response.write(`event: message\ndata: ${ask(index)}\n\n`)
      response.end(`event: message\ndata: ${answerFor(body)}\n\n`)
    } else if (path === "/break") {
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write(": working\n\n", () => response.destroy())
    } else if (body === "" || JSON.parse(body).id === undefined) {
      response.writeHead(202)
      response.end()
    } else {
      response.writeHead(200, { "content-type": "application/json" })
      response.end(answerFor(body))
    }
  })
})
await new Promise<void>((resolve) => stub.listen(0, "127.0.0.1", resolve))
const stubUrl = (path: string) => `http://127.0.0.1:${(stub.address() as AddressInfo).port}${path}`
afterAll(() => {
  for (const response of held) response.destroy()
  stub.closeAllConnections()
  stub.close()
})

/** Waits until the stub has received `count` requests on `path`. */
const receivedOn = (path: string, count: number) =>
  until(
    Effect.filterOrFail(
      Effect.sync(() => received.filter((one) => one.path === path).length >= count),
      (done) => done
    )
  )

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("MCP requests in flight", (it) => {
  for (const path of ["/head", "/json"]) {
    it.effect(`${path}: deleting the server ends a call waiting for its answer with 404 mcp_server_not_found`, () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(stubUrl(path))
        const before = received.filter((one) => one.path === path).length
        const pending = yield* Effect.fork(rawLookupCall(setup))
        yield* receivedOn(path, before + 1)
        yield* setup.owner.api.mcpServers.deleteMcpServer({ path: { id: setup.serverId } })
        const answer = yield* Fiber.join(pending)
        expect(answer.status, answer.text).toBe(404)
        expect((answer.body as { error: { code: string } }).error.code).toBe("mcp_server_not_found")
        // The slot the call held is free again, and the service answers.
        expect((yield* request(`${setup.base}/healthz`)).status).toBe(200)
      })
    )
  }

  it.effect("deleting the server ends a relayed event stream with the request's JSON-RPC error", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(stubUrl("/sse"))
      const before = received.filter((one) => one.path === "/sse").length
      const pending = yield* Effect.fork(rawLookupCall(setup))
      yield* receivedOn("/sse", before + 1)
      yield* setup.owner.api.mcpServers.deleteMcpServer({ path: { id: setup.serverId } })
      const answer = yield* Fiber.join(pending)
      expect(answer.status).toBe(200)
      expect(answer.text).toContain(": working")
      expect(answer.text).toContain('"id":7')
      expect(answer.text).toContain("was deleted")
      // Deleted, it is gone for the next request too.
      expect((yield* rawLookupCall(setup)).status).toBe(404)
    })
  )

  it.effect(
    "an event stream that breaks off unanswered, with no event id to resume from, ends with the request's error",
    () =>
      Effect.gen(function* () {
        const setup = yield* mcpTenant(stubUrl("/break"))
        const answer = yield* rawLookupCall(setup)
        expect(answer.status).toBe(200)
        expect(answer.text).toContain('"id":7')
        expect(answer.text).toContain("broke off")
      })
  )

  it.effect("a response repeated by the server reaches the client, and is decided, once", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(stubUrl("/repeat"))
      const answer = yield* rawLookupCall(setup)
      expect(answer.status).toBe(200)
      expect(answer.text.split('"id":7').length - 1, answer.text).toBe(1)
      const traces = yield* setup.owner.api.traces.listTraces({ urlParams: {} })
      const kinds = traces.traces.map((trace) => (trace.payload as { request: { kind: string } }).request.kind)
      expect(kinds.sort()).toEqual(["output.proposed", "tool.result"])
    })
  )

  it.effect("a server's requests on one stream are decided up to a bound; the rest are dropped unseen", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(stubUrl("/spam"))
      const answer = yield* rawLookupCall(setup)
      expect(answer.status).toBe(200)
      expect(answer.text.split("sampling/createMessage").length - 1).toBe(MAX_SERVER_REQUESTS_PER_STREAM)
      expect(answer.text).not.toContain(`"ask-${MAX_SERVER_REQUESTS_PER_STREAM}"`)
      expect(answer.text).toContain('"text":"ok"')
    })
  )

  it.effect("a tools/call without an id is refused and never reaches the server", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(stubUrl("/plain"))
      const notification = yield* postMessage(setup, {
        method: "tools/call",
        params: { name: "delete_mailbox", arguments: {} }
      })
      expect(notification.status, notification.text).toBe(400)
      expect(notification.text).toContain("id")
      expect(received.filter((one) => one.body.includes("delete_mailbox"))).toEqual([])
      // Other notifications pass as before.
      const other = yield* postMessage(setup, { method: "notifications/initialized" })
      expect(other.status).toBe(202)
    })
  )

  it.effect("a message naming a key twice is refused and never reaches the server", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(stubUrl("/plain"))
      // Decided with the last "name" (JSON.parse keeps it); a server keeping the first would delete the mailbox.
      const twice = yield* request(`${setup.base}/v1/mcp/${setup.serverId}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${setup.key}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream"
        },
        body: '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"delete_mailbox","name":"lookup_order","arguments":{}}}'
      })
      expect(twice.status, twice.text).toBe(400)
      expect(twice.text).toContain("the same key twice")
      expect(received.filter((one) => one.body.includes("delete_mailbox"))).toEqual([])
    })
  )

  it.effect("a server whose agent was deleted decides as a route does: the workspace's default action", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(stubUrl("/plain"))
      const removed = yield* call(setup.base, "DELETE", `/v1/agents/${AGENT}`, { token: setup.owner.jwt })
      expect(removed.status).toBe(204)
      // default_action permit: the call passes, its decision saying the agent is not registered.
      const passed = yield* rawLookupCall(setup)
      expect(passed.text).toContain('"text":"ok"')
      const traces = yield* setup.owner.api.traces.listTraces({ urlParams: {} })
      expect(JSON.stringify(traces.traces[0]?.payload)).toContain("agent.registered")
      // default_action deny: refused, naming why.
      yield* setup.owner.api.settings.updateSettings({ payload: { default_action: "deny" } })
      const refused = yield* rawLookupCall(setup)
      expect(refused.text).toContain("Agent mail-bot is not registered")
      expect(refused.text).toContain('"isError":true')
      expect(refused.text).not.toContain('"text":"ok"')
    })
  )
})

const LIMIT = 2

layer(
  testServerWithDatabase("database", { ...GATEWAY_SETTINGS, GATEWAY_MAX_STREAMS_PER_KEY: String(LIMIT) }),
  SERVER_OPTIONS
)("MCP requests given up", (it) => {
  it.effect("a client that goes away while the server has not answered gives its call slot back", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(stubUrl("/head"))
      for (let index = 0; index < LIMIT * 2; index++) {
        const before = received.filter((one) => one.path === "/head").length
        const controller = new AbortController()
        const call = fetch(`${setup.base}/v1/mcp/${setup.serverId}`, {
          method: "POST",
          signal: controller.signal,
          headers: {
            authorization: `Bearer ${setup.key}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream"
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: index, method: "tools/call", params: { name: "lookup_order" } })
        }).catch(() => undefined)
        yield* receivedOn("/head", before + 1)
        controller.abort()
        yield* Effect.promise(() => call)
      }
      // Ending a session holds a slot too while the server has not answered: the third at once is 429.
      const ends = Array.from({ length: LIMIT }, () => new AbortController())
      const before = received.filter((one) => one.path === "/head").length
      const ending = ends.map((controller) =>
        fetch(`${setup.base}/v1/mcp/${setup.serverId}`, {
          method: "DELETE",
          signal: controller.signal,
          headers: { authorization: `Bearer ${setup.key}`, "mcp-session-id": "s-1" }
        }).catch(() => undefined)
      )
      yield* receivedOn("/head", before + LIMIT)
      const third = yield* call(setup.base, "DELETE", `/v1/mcp/${setup.serverId}`, {
        token: setup.key,
        headers: { "mcp-session-id": "s-1" }
      })
      expect(third.status, third.text).toBe(429)
      for (const controller of ends) controller.abort()
      yield* Effect.promise(() => Promise.all(ending))
      // Each gave its slot back: the key still has both.
      yield* setup.owner.api.mcpServers.updateMcpServer({
        path: { id: setup.serverId },
        payload: { url: stubUrl("/plain"), headers: null }
      })
      const answer = yield* until(
        Effect.filterOrFail(rawLookupCall(setup), (response) => response.status === 200),
        "5 seconds"
      )
      expect(answer.text).toContain('"text":"ok"')
    })
  )
})
