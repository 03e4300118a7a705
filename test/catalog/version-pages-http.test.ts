/**
 * The lifecycle version lists page (docs/policies.md, "Lifecycle"): a policy-as-code pipeline
 * records a version per commit, so a policy with more versions than a page answers the newest 50
 * by default, at most 100 (`limit` above it is clamped), with `next_cursor` to the next page;
 * following it reaches every version once, newest first. Rollback reaches any version, not only
 * those on the first page. Tool metadata (catalog_versions) pages the same way. The history is
 * seeded in SQL: a hundred API writes per test would only be slower.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId } from "../../src/catalog/Domain.js"
import { encodeCursor } from "../../src/platform/Cursor.js"
import { queryDatabase } from "../support/Database.js"
import { policyDocument, yamlBytes } from "../support/Events.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { createAgent, minimalAgentYaml, policyPath } from "./catalog-helpers.js"

const POLICY = "busy-policy"
const POLICY_VERSIONS = 130
const TOOL = "send_money"
const TOOL_VERSIONS = 60

interface Page {
  readonly versions: ReadonlyArray<{ readonly version: number; readonly source_yaml?: string }>
  readonly next_cursor?: string
}

/** `n, n-1, ..., to`. */
const countdown = (from: number, to: number) => Array.from({ length: from - to + 1 }, (_, index) => from - index)
const textOf = (version: number) => policyDocument(POLICY, { value: `word-${version}` })

/** Creates POLICY (version 1) through the API and records versions 2 to POLICY_VERSIONS in SQL. */
const seedPolicy = (databaseUrl: string, owner: Tenant) =>
  Effect.gen(function* () {
    yield* owner.api.policies.createPolicy({ payload: yamlBytes(textOf(1)) })
    const seeded = countdown(POLICY_VERSIONS, 2).map((version) => ({ version, source_yaml: textOf(version) }))
    yield* queryDatabase(
      databaseUrl,
      `insert into policy_versions (workspace_id, policy_id, version, source_yaml, document, enabled,
                                    created_by_kind, created_by_id)
       select $1, $2, v.version, v.source_yaml, '{}'::jsonb, true, 'user', $3
       from jsonb_to_recordset($4::jsonb) as v(version int, source_yaml text)`,
      [owner.workspaceId, POLICY, owner.user_id, JSON.stringify(seeded)]
    )
  })

/** One page of `url` (200 asserted), `query` being the query string without `?`. */
const pageOf = (base: string, owner: Tenant, url: string, query = "") =>
  Effect.gen(function* () {
    const response = yield* call(base, "GET", query === "" ? url : `${url}?${query}`, { token: owner.jwt })
    expect(response.status, response.text).toBe(200)
    return response.body as Page
  })

/** Every page of `url` by `limit`, following `next_cursor`: the version numbers of each page. */
const allPages = (base: string, owner: Tenant, url: string, limit: number) =>
  Effect.gen(function* () {
    const pages: Array<ReadonlyArray<number>> = []
    let cursor: string | undefined
    do {
      const query = `limit=${limit}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
      const page = yield* pageOf(base, owner, url, query)
      pages.push(page.versions.map((version) => version.version))
      cursor = page.next_cursor
      expect(pages.length).toBeLessThanOrEqual(200)
    } while (cursor !== undefined)
    return pages
  })

/** Bad `limit` and `cursor` values answer 400 naming the parameter. */
const expectBadPageParams = (base: string, owner: Tenant, url: string) =>
  Effect.gen(function* () {
    const get = (query: string) => call(base, "GET", `${url}?${query}`, { token: owner.jwt })
    for (const limit of ["0", "-1", "abc", "2.5"]) expectValidation(yield* get(`limit=${limit}`), "limit")
    for (const cursor of ["garbage", encodeCursor(["abc"]), encodeCursor(["0"]), encodeCursor(["5", "6"])]) {
      expectValidation(yield* get(`cursor=${encodeURIComponent(cursor)}`), "cursor")
    }
  })

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("lifecycle version lists page", (it) => {
  describe("GET /v1/policies/{id}/versions", () => {
    it.effect(`${POLICY_VERSIONS} versions: 50 newest by default, clamped to 100, next_cursor reaches each once`, () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const databaseUrl = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* seedPolicy(databaseUrl, owner)
        const url = `/v1/policies/${POLICY}/versions`

        const first = yield* pageOf(base, owner, url)
        expect(first.versions.map((version) => version.version)).toEqual(countdown(POLICY_VERSIONS, 81))
        expect(first.versions[0]!.source_yaml).toBe(textOf(POLICY_VERSIONS))
        expect(typeof first.next_cursor).toBe("string")

        const clamped = yield* pageOf(base, owner, url, "limit=100000")
        expect(clamped.versions.map((version) => version.version)).toEqual(countdown(POLICY_VERSIONS, 31))
        expect(typeof clamped.next_cursor).toBe("string")

        const byForty = yield* allPages(base, owner, url, 40)
        expect(byForty.map((page) => page.length)).toEqual([40, 40, 40, 10])
        expect(byForty.flat()).toEqual(countdown(POLICY_VERSIONS, 1))
        // A last page that is exactly full says nothing more follows.
        expect((yield* allPages(base, owner, url, 65)).map((page) => page.length)).toEqual([65, 65])
        expect((yield* allPages(base, owner, url, 100)).flat()).toEqual(countdown(POLICY_VERSIONS, 1))

        // Past the oldest version: an empty page, not a 404 (the policy exists).
        const past = yield* pageOf(base, owner, url, `cursor=${encodeCursor(["1"])}`)
        expect(past).toEqual({ versions: [] })
        yield* expectBadPageParams(base, owner, url)
        expectError(yield* call(base, "GET", "/v1/policies/nobody/versions", { token: owner.jwt }), 404)
        expectError(
          yield* call(base, "GET", `/v1/policies/nobody/versions?cursor=${encodeCursor(["7"])}`, { token: owner.jwt }),
          404
        )
        // Another workspace sees none of it, whatever the page.
        const stranger = yield* tenant(base)
        expectError(yield* call(base, "GET", `${url}?limit=5`, { token: stranger.jwt }), 404)
      })
    )

    it.effect("rollback reaches a version far off the first page; the typed client pages", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const databaseUrl = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* seedPolicy(databaseUrl, owner)
        const rolled = yield* owner.api.policies.rollbackPolicy({ path: policyPath(POLICY), payload: { version: 3 } })
        expect(rolled).toMatchObject({ version: POLICY_VERSIONS + 1, source_yaml: textOf(3) })

        const top = yield* owner.api.policies.listPolicyVersions({ path: policyPath(POLICY), urlParams: { limit: 2 } })
        expect(top.versions.map((version) => [version.version, version.source_yaml])).toEqual([
          [POLICY_VERSIONS + 1, textOf(3)],
          [POLICY_VERSIONS, textOf(POLICY_VERSIONS)]
        ])
        const next = yield* owner.api.policies.listPolicyVersions({
          path: policyPath(POLICY),
          urlParams: { limit: 2, cursor: top.next_cursor! }
        })
        expect(next.versions.map((version) => version.version)).toEqual([POLICY_VERSIONS - 1, POLICY_VERSIONS - 2])
      })
    )
  })

  describe("GET /v1/tool-metadata/{tool}/versions", () => {
    it.effect(`${TOOL_VERSIONS} versions page the same way`, () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const databaseUrl = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* owner.api.toolMetadata.upsertToolMetadata({
          payload: { tool: TOOL, reversible: false, side_effect: "payment" }
        })
        yield* queryDatabase(
          databaseUrl,
          `insert into catalog_versions (workspace_id, resource, key, version, content, created_by_kind, created_by_id)
           select $1, 'tool_metadata', $2, n, jsonb_build_object('enabled', true, 'metadata',
                  jsonb_build_object('tool', $2::text, 'reversible', n % 2 = 0, 'side_effect', 'payment')),
                  'user', $3
           from generate_series(2, $4::int) as n`,
          [owner.workspaceId, TOOL, owner.user_id, TOOL_VERSIONS]
        )
        const url = `/v1/tool-metadata/${TOOL}/versions`

        const first = yield* pageOf(base, owner, url)
        expect(first.versions.map((version) => version.version)).toEqual(countdown(TOOL_VERSIONS, 11))
        expect(typeof first.next_cursor).toBe("string")
        const pages = yield* allPages(base, owner, url, 25)
        expect(pages.map((page) => page.length)).toEqual([25, 25, 10])
        expect(pages.flat()).toEqual(countdown(TOOL_VERSIONS, 1))
        yield* expectBadPageParams(base, owner, url)
        expectError(yield* call(base, "GET", "/v1/tool-metadata/never_seen/versions", { token: owner.jwt }), 404)
      })
    )
  })

  describe("GET /v1/agents/{id}/versions", () => {
    it.effect("a version stored before profiles had canaries reads as having none (not a 500)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const databaseUrl = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const agent = "older-bot"
        const created = yield* createAgent(owner, minimalAgentYaml(agent))
        // Version 1 as migration 0022 copied it from a profile stored before `canaries` existed.
        const { canaries: _canaries, ...older } = created
        yield* queryDatabase(
          databaseUrl,
          `update catalog_versions set content = jsonb_build_object('profile', $3::jsonb, 'source_text', 'old')
           where workspace_id = $1 and resource = 'agent' and key = $2 and version = 1`,
          [owner.workspaceId, agent, JSON.stringify(older)]
        )
        const page = yield* owner.api.agents.listAgentVersions({ path: { id: AgentId.make(agent) }, urlParams: {} })
        expect(page.versions.map((version) => [version.version, version.profile.canaries])).toEqual([[1, []]])
      })
    )
  })

  describe("pages end at 4 MiB of documents", () => {
    /** Every page of `url` at the largest limit: each page's JSON size and version numbers. */
    const bytePages = (base: string, owner: Tenant, url: string) =>
      Effect.gen(function* () {
        const pages: Array<{ readonly bytes: number; readonly versions: ReadonlyArray<number> }> = []
        let cursor: string | undefined
        do {
          const query = `limit=100${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
          const response = yield* call(base, "GET", `${url}?${query}`, { token: owner.jwt })
          expect(response.status).toBe(200)
          const page = response.body as Page
          pages.push({ bytes: Buffer.byteLength(response.text), versions: page.versions.map((v) => v.version) })
          cursor = page.next_cursor
          expect(pages.length).toBeLessThanOrEqual(50)
        } while (cursor !== undefined)
        return pages
      })
    const MiB = 1024 * 1024
    const DOCUMENT_BYTES = 200 * 1024

    it.effect("40 policy versions of 200 KiB: pages of at most 4 MiB and one version, each version once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const databaseUrl = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* owner.api.policies.createPolicy({ payload: yamlBytes(textOf(1)) })
        yield* queryDatabase(
          databaseUrl,
          `insert into policy_versions (workspace_id, policy_id, version, source_yaml, document, enabled,
                                        created_by_kind, created_by_id)
           select $1, $2, n, '# ' || repeat('x', $3::int), '{}'::jsonb, true, 'user', $4
           from generate_series(2, 40) as n`,
          [owner.workspaceId, POLICY, DOCUMENT_BYTES, owner.user_id]
        )
        const pages = yield* bytePages(base, owner, `/v1/policies/${POLICY}/versions`)
        expect(pages.flatMap((page) => page.versions)).toEqual(countdown(40, 1))
        expect(pages.length).toBeGreaterThan(1)
        for (const page of pages) expect(page.bytes).toBeLessThan(4 * MiB + 2 * DOCUMENT_BYTES)
      })
    )

    it.effect("30 agent versions of 200 KiB: pages of at most 4 MiB and one version, each version once", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const databaseUrl = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        const agent = "big-profile-bot"
        const created = yield* createAgent(owner, minimalAgentYaml(agent))
        yield* queryDatabase(
          databaseUrl,
          `insert into catalog_versions (workspace_id, resource, key, version, content, created_by_kind, created_by_id)
           select $1, 'agent', $2, n, jsonb_build_object('profile', $3::jsonb, 'source_text', repeat('y', $4::int)),
                  'user', $5
           from generate_series(2, 30) as n`,
          [owner.workspaceId, agent, JSON.stringify(created), DOCUMENT_BYTES, owner.user_id]
        )
        const pages = yield* bytePages(base, owner, `/v1/agents/${agent}/versions`)
        expect(pages.flatMap((page) => page.versions)).toEqual(countdown(30, 1))
        expect(pages.length).toBeGreaterThan(1)
        for (const page of pages) expect(page.bytes).toBeLessThan(4 * MiB + 2 * DOCUMENT_BYTES)
      })
    )
  })
})
