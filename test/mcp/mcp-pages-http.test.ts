/**
 * The MCP management lists are paged (docs/mcp.md, docs/limits.md): a workspace's servers newest first,
 * a server's tool pins by name, each `limit` at a time (default 50, at most 100) with `next_cursor`. A
 * page of pins also ends after the pin whose definition brings it to 4 MiB of JSON: a server may hold
 * 1,000 pins of up to 64 KiB each, which made one answer of tens of MiB. Following `next_cursor` reads
 * every row once; a cursor that is not one of the list's, or a limit below 1, is 400. `withheld=true` lists
 * only the pins not callable (what the console shows).
 */
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { McpServerId } from "../../src/mcp/Domain.js"
import { MAX_PAGE_BYTES } from "../../src/platform/PageBytes.js"
import { GATEWAY_SETTINGS } from "../gateway/gateway-helpers.js"
import { expectFailure } from "../support/Api.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant, type Tenant } from "../support/Tenants.js"
import { SERVER_OPTIONS, testServerWithDatabase } from "../support/TestServer.js"
import { startListingUpstream } from "./listing-upstream.js"
import { AGENT, mcpTenant, postMessage, type Setup } from "./mcp-helpers.js"

const upstream = await startListingUpstream()
afterAll(() => upstream.close())
const upstreamUrl = upstream.url

/** `count` tools named tool-000..., each with a parameter whose default holds `padding` characters. */
const toolsOf = (count: number, padding = 0) =>
  Array.from({ length: count }, (_, index) => ({
    name: `tool-${String(index).padStart(3, "0")}`,
    description: "Looks something up",
    inputSchema: { type: "object", properties: { v: { type: "string", default: "x".repeat(padding) } } }
  }))

/** Lists the upstream's tools through the gateway: the first listing pins each of them. */
const pinAll = (setup: Setup) =>
  Effect.map(postMessage(setup, { id: 3, method: "tools/list" }), (answer) => {
    expect(answer.status, answer.text).toBe(200)
    const listed = (answer.body as { readonly result: { readonly tools: ReadonlyArray<unknown> } }).result.tools
    expect(listed).toHaveLength(upstream.tools.length)
  })

const pinsPage = (
  setup: Setup,
  urlParams: { readonly limit?: number; readonly cursor?: string; readonly withheld?: "true" | "false" }
) => setup.owner.api.mcpServers.listMcpToolPins({ path: { id: setup.serverId }, urlParams })

/** Every page of `fetch` from the first, following next_cursor: each page's rows. */
const allPages = <A, E>(
  fetch: (cursor: string | undefined) => Effect.Effect<{ readonly rows: ReadonlyArray<A>; readonly next?: string }, E>
) =>
  Effect.gen(function* () {
    const pages: Array<ReadonlyArray<A>> = []
    let cursor: string | undefined
    do {
      const page = yield* fetch(cursor)
      pages.push(page.rows)
      cursor = page.next
    } while (cursor !== undefined)
    return pages
  })

const serverPages = (owner: Tenant, limit: number) =>
  allPages((cursor) =>
    Effect.map(
      owner.api.mcpServers.listMcpServers({ urlParams: { limit, ...(cursor === undefined ? {} : { cursor }) } }),
      (page) => ({
        rows: page.mcp_servers.map((server) => server.id),
        ...(page.next_cursor ? { next: page.next_cursor } : {})
      })
    )
  )

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("MCP list pages", (it) => {
  it.effect("servers page newest first; another workspace's are in none of the pages", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(upstreamUrl)
      const servers = setup.owner.api.mcpServers
      const created: Array<McpServerId> = [setup.serverId]
      for (let index = 0; index < 4; index++) {
        const payload = { display_name: `Mail ${index}`, url: upstreamUrl, agent_id: AGENT }
        created.push((yield* servers.createMcpServer({ payload })).id)
      }
      const other = yield* mcpTenant(upstreamUrl)

      const pages = yield* serverPages(setup.owner, 2)
      expect(pages.map((page) => page.length)).toEqual([2, 2, 1])
      expect(pages.flat()).toEqual([...created].reverse())
      expect(pages.flat()).not.toContain(other.serverId)
      const whole = yield* servers.listMcpServers({ urlParams: {} })
      expect([whole.mcp_servers.length, whole.next_cursor]).toEqual([5, undefined])

      const path = "/v1/mcp/servers"
      const token = { token: setup.owner.jwt }
      expectValidation(yield* call(setup.base, "GET", `${path}?limit=0`, token), "limit")
      expectValidation(yield* call(setup.base, "GET", `${path}?cursor=not-a-cursor`, token), "cursor")
      const pinsCursor = Buffer.from(JSON.stringify(["tool-000"])).toString("base64url")
      expectValidation(yield* call(setup.base, "GET", `${path}?cursor=${pinsCursor}`, token), "cursor")
    })
  )

  it.effect("pins page by name, 50 by default and at most 100", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(upstreamUrl)
      const names = toolsOf(130).map((tool) => tool.name)
      upstream.tools = toolsOf(130)
      yield* pinAll(setup)

      const first = yield* pinsPage(setup, {})
      expect(first.tools.map((pin) => pin.tool)).toEqual(names.slice(0, 50))
      const clamped = yield* pinsPage(setup, { limit: 1_000 })
      expect(clamped.tools).toHaveLength(100)
      const rest = yield* pinsPage(setup, { limit: 100, cursor: clamped.next_cursor! })
      expect([rest.tools.map((pin) => pin.tool), rest.next_cursor]).toEqual([names.slice(100), undefined])

      // Two tools change: only they are withheld, and only they are listed with withheld=true.
      upstream.tools = toolsOf(130).map((tool, index) =>
        index === 5 || index === 120 ? { ...tool, description: "Looks something else up" } : tool
      )
      const relisted = yield* postMessage(setup, { id: 4, method: "tools/list" })
      expect((relisted.body as { result: { tools: ReadonlyArray<unknown> } }).result.tools).toHaveLength(128)
      const withheld = yield* pinsPage(setup, { withheld: "true" })
      expect(withheld.tools.map((pin) => [pin.tool, pin.status])).toEqual([
        ["tool-005", "changed"],
        ["tool-120", "changed"]
      ])
      expect(withheld.next_cursor).toBeUndefined()
      expect((yield* pinsPage(setup, { withheld: "false" })).tools).toHaveLength(50)

      // Another workspace cannot page this server's pins.
      const other = yield* tenant(setup.base)
      const foreign = other.api.mcpServers.listMcpToolPins({ path: { id: setup.serverId }, urlParams: {} })
      yield* expectFailure(foreign, 404, "mcp_server_not_found")
      // Nor accept or forget one of them (the digest read by its own admin).
      const pinPath = { id: setup.serverId, tool: "tool-005" }
      const seenDigest = withheld.tools[0]!.seen_digest
      const acceptForeign = other.api.mcpServers.acceptMcpToolPin({
        path: pinPath,
        payload: { seen_digest: seenDigest }
      })
      yield* expectFailure(acceptForeign, 404, "mcp_server_not_found")
      yield* expectFailure(other.api.mcpServers.deleteMcpToolPin({ path: pinPath }), 404, "mcp_server_not_found")
      expect((yield* pinsPage(setup, { withheld: "true" })).tools.map((pin) => pin.tool)).toEqual([
        "tool-005",
        "tool-120"
      ])
      const path = `/v1/mcp/servers/${setup.serverId}/tools`
      const serversCursor = Buffer.from(JSON.stringify(["2026-11-29T00:00:00.000Z", "mcps_1"])).toString("base64url")
      const token = { token: setup.owner.jwt }
      expectValidation(yield* call(setup.base, "GET", `${path}?cursor=${serversCursor}`, token), "cursor")
      expectValidation(yield* call(setup.base, "GET", `${path}?limit=-1`, token), "limit")
      expectValidation(yield* call(setup.base, "GET", `${path}?withheld=yes`, token), "withheld")
    })
  )

  it.effect("a page of pins ends after the definition that brings it to 4 MiB, and the next goes on", () =>
    Effect.gen(function* () {
      const setup = yield* mcpTenant(upstreamUrl)
      const listed = toolsOf(80, 64_000)
      upstream.tools = listed
      yield* pinAll(setup)

      const pages = yield* allPages((cursor) =>
        Effect.map(pinsPage(setup, { limit: 100, ...(cursor === undefined ? {} : { cursor }) }), (page) => ({
          rows: page.tools,
          ...(page.next_cursor ? { next: page.next_cursor } : {})
        }))
      )
      expect(pages.length).toBe(2)
      expect(pages.flat().map((pin) => pin.tool)).toEqual(listed.map((tool) => tool.name))
      for (const page of pages) {
        // The budget counts definitions: a page holds at most one definition past it.
        expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThan(MAX_PAGE_BYTES + 128 * 1024)
      }
      expect(pages[0]!.every((pin) => JSON.stringify(pin.seen_definition).includes("x".repeat(64_000)))).toBe(true)
    })
  )
})
