/**
 * Property-based robustness of every endpoint of the identity issue: random
 * JSON bodies (mostly objects with the endpoint's own field names holding
 * near-valid or hostile values), random non-JSON text, random content types,
 * random path ids and headers, sent with a valid owner session (or the
 * internal key, or nothing, as the endpoint needs). The answer is never a
 * 5xx; a 4xx always carries {error: {code, message}} with a snake_case code.
 * Seeds are fixed, so a failure replays.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import type { GuardrailClient } from "../support/Api.js"
import { isErrorBody } from "../support/Raw.js"
import { createEnvironment, createKey, INTERNAL_KEY, sha256Hex, signUp, tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const SEED = 20_261_122
const INVITED = ["someone@example.com", "invited1@example.com", "invited2@example.com", "invited3@example.com"]
const RUNS = 200

interface World {
  readonly base: string
  readonly owner: {
    jwt: string
    user_id: string
    username: string
    workspaceId: string
    defaultEnvironmentId: string
    api: GuardrailClient
  }
  readonly other: { user_id: string; workspaceId: string; defaultEnvironmentId: string }
  readonly victim: { username: string; password: string }
  readonly stagingId: string
  readonly keyId: string
  readonly otherKeyId: string
}

// ---------------------------------------------------------------- arbitraries

const hex64 = fc.stringMatching(/^[0-9a-fA-F]{64}$/)
const printable = (max: number) => fc.stringMatching(new RegExp(`^[\\x20-\\x7e]{0,${max}}$`))

/** Values that are nearly valid for some field of this issue, or hostile. */
const fieldValue = (world: World) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    {
      weight: 4,
      arbitrary: fc.constantFrom<unknown>(
        "",
        " ",
        "   ",
        null,
        true,
        0,
        -1,
        1.5,
        1e308,
        "x".repeat(5_000),
        "\u0000",
        "ünïcødé ☃",
        "__proto__",
        { __proto__: { polluted: true } },
        [],
        {},
        // passwords and users
        world.victim.password,
        world.victim.username,
        world.owner.username,
        sha256Hex("wrong"),
        "a".repeat(63),
        // enums
        "off",
        "observe",
        "enforce",
        "OFF",
        "owner",
        "admin",
        "member",
        "permit",
        "deny",
        "defer",
        "rewrite",
        "raw_allowed",
        "redacted",
        "metadata_only",
        // environments and keys
        "production",
        "staging-2",
        "Bad_Slug",
        "a".repeat(64),
        world.stagingId,
        world.owner.defaultEnvironmentId,
        world.other.defaultEnvironmentId,
        world.keyId,
        "key_does_not_exist",
        [world.keyId],
        ["key_does_not_exist", 5],
        // settings
        "30",
        "0",
        "-5",
        "https://hooks.example.com/x",
        "http://127.0.0.1/x",
        "javascript:alert(1)",
        { cap_minor: 100, currency: "usd", window: "day" },
        { cap_minor: -1, currency: "eur", window: "week" },
        { cap_minor: "1" },
        { llm_budget: { cap_minor: 100, currency: "usd", window: "month" } },
        { llm_budget: null, other: { nested: [1, 2] } },
        { action_budget: { cap: 3 } },
        { llm_budget: "x" },
        // emails and ids
        "someone@example.com",
        "no-at-sign",
        " spaced@example.com ",
        world.owner.user_id,
        "00000000-0000-0000-0000-000000000000",
        "2026-11-22T10:00:00.000Z"
      )
    },
    { weight: 1, arbitrary: hex64 },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }) }
  )

type Special = Readonly<Record<string, fc.Arbitrary<unknown>>>

/** Now and then a NUL character inside an otherwise plausible string (JSON allows "\u0000"). */
const withNul = (arbitrary: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 9, arbitrary },
    { weight: 1, arbitrary: arbitrary.map((value) => (typeof value === "string" ? `${value}\u0000` : value)) }
  )

/**
 * A JSON object over the endpoint's field names (each present or not, holding
 * a field-specific or a general value), plus a few stranger keys.
 */
const objectBody = (world: World, fields: ReadonlyArray<string>, special: Special = {}) =>
  fc
    .tuple(
      fc.record(
        Object.fromEntries(
          fields.map((field) => [
            field,
            special[field] === undefined
              ? fieldValue(world)
              : fc.oneof(
                  { weight: 2, arbitrary: withNul(special[field]!) },
                  { weight: 1, arbitrary: fieldValue(world) }
                )
          ])
        ),
        { requiredKeys: [] }
      ),
      fc.dictionary(fc.constantFrom("updated_at", "id", "__proto__", "constructor", "extra"), fieldValue(world), {
        maxKeys: 2
      })
    )
    .map(([known, extra]) => ({ ...extra, ...known }))

/** Field-specific values that are valid more often than not, so that the handlers get exercised too. */
const specialValues = (world: World): Special => {
  const mode = fc.constantFrom("off", "observe", "enforce", null)
  return {
    username: fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom(world.victim.username, world.owner.username)),
    password: fc.oneof(hex64, fc.constant(world.victim.password)),
    current_password: fc.oneof(hex64, fc.constant(world.victim.password)),
    new_password: hex64,
    email: fc.oneof(fc.emailAddress(), fc.constantFrom("someone@example.com", "Someone@Example.com")),
    provider: fc.constantFrom("google", "github", "x"),
    provider_subject: fc.string({ minLength: 1, maxLength: 20 }),
    ids: fc.array(fc.constantFrom(world.keyId, "key_does_not_exist", world.otherKeyId), { maxLength: 3 }),
    name: fc.string({ minLength: 1, maxLength: 30 }),
    slug: fc.stringMatching(/^[a-z0-9-]{1,12}$/),
    description: fc.option(fc.string({ maxLength: 30 }), { nil: null }),
    environment_id: fc.constantFrom(
      world.stagingId,
      world.owner.defaultEnvironmentId,
      world.other.defaultEnvironmentId
    ),
    role: fc.constantFrom("owner", "admin", "member"),
    approval_checker_mode: mode,
    flow_checker_mode: mode,
    memory_checker_mode: mode,
    param_checker_mode: mode,
    data_handling_mode: fc.constantFrom("raw_allowed", "redacted", "metadata_only"),
    default_action: fc.constantFrom("permit", "deny", "defer"),
    escalation_webhook_url: fc.oneof(fc.webUrl(), fc.constant(null)),
    retention_days: fc.integer({ min: -5, max: 400 }).map(String),
    telemetry_enabled: fc.boolean(),
    config: fc.dictionary(
      fc.oneof(fc.constantFrom("llm_budget", "action_budget"), fc.string({ maxLength: 10 })),
      fc.oneof(
        fc.record({
          cap_minor: fc.oneof(fc.nat(), fc.integer(), fc.double()),
          currency: fc.constantFrom("usd", "eur"),
          window: fc.constantFrom("day", "month", "week")
        }),
        fc.record({ cap: fc.integer({ min: -3, max: 1000 }) }),
        fc.jsonValue({ maxDepth: 2 }),
        fc.constant(null)
      ),
      { maxKeys: 3 }
    )
  }
}

interface Body {
  readonly raw?: string | undefined
  readonly contentType?: string | undefined
}

/** Random bodies: mostly JSON objects with the right field names; also any JSON, text and odd content types. */
const bodies = (world: World, fields: ReadonlyArray<string>): fc.Arbitrary<Body> =>
  fc
    .record({
      text: fc.oneof(
        { weight: 6, arbitrary: objectBody(world, fields, specialValues(world)).map((value) => JSON.stringify(value)) },
        { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)) },
        { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            "{bad",
            "[",
            "",
            " ",
            "nul",
            "{'a':1}",
            '"unterminated',
            "\ufeff{}",
            "{}{}",
            "1e999"
          )
        }
      ),
      contentType: fc.oneof(
        { weight: 8, arbitrary: fc.constant("application/json") },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            "application/json; charset=utf-8",
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/yaml",
            "application/octet-stream"
          )
        }
      )
    })
    .map(({ contentType, text }) => ({ raw: text, contentType }))

/** Path ids: mostly the real ones; also the other tenant's and junk (already URL-encoded). */
const pathIds = (world: World) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(world.stagingId, world.owner.defaultEnvironmentId) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        world.other.defaultEnvironmentId,
        "env_does_not_exist",
        "%00",
        "%20",
        "%2F",
        "%E0%A4%A",
        "__proto__",
        "null",
        "-1",
        "a".repeat(2_000),
        encodeURIComponent("' or 1=1 --")
      )
    },
    {
      weight: 1,
      arbitrary: fc
        .string({ maxLength: 40 })
        .filter((s) => s !== "" && s !== "." && s !== "..")
        .map(encodeURIComponent)
    }
  )

/** Now and then a workspace header: the owner's own, the other tenant's, junk. */
const workspaceHeader = (world: World) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom(world.owner.workspaceId, world.other.workspaceId, "ws_nope", "", " "),
        printable(40)
      )
    }
  )

const queries = fc.constantFrom("", "", "", "?limit=-1", "?limit=abc", "?cursor=%FF", "?a[b]=1", "?__proto__=1")

// ---------------------------------------------------------------- the property

interface Sent {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string | undefined
}

interface Answer {
  readonly status: number
  readonly text: string
}

/** Raw by nature: the bodies, content types, paths and headers are random, most of them outside the contract. */
const send = async (base: string, sent: Sent): Promise<Answer> => {
  const response = await fetch(`${base}${sent.path}`, {
    method: sent.method,
    headers: sent.headers,
    ...(sent.body === undefined ? {} : { body: sent.body }),
    signal: AbortSignal.timeout(15_000)
  })
  return { status: response.status, text: await response.text() }
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

const describeSent = (sent: Sent) => {
  const nul = /\\u0000|%00/i.test(`${sent.path} ${sent.body ?? ""}`) ? " [carries a NUL character]" : ""
  return `${sent.method} ${sent.path.slice(0, 100)} ${JSON.stringify(sent.headers).slice(0, 200)} body=${String(sent.body ?? "").slice(0, 200)}${nul}`
}

/**
 * Sends every generated request and checks each answer: never 5xx, 4xx with
 * the error body, a success with a JSON body (or 204), and (when
 * `sessionMustHold`) never a 401 for the owner's valid session. Every run is
 * checked (no early stop, so one defect does not hide another); the test
 * then fails listing the offenders, one per distinct kind.
 */
const fuzz = (
  base: string,
  requests: fc.Arbitrary<Sent>,
  options: { readonly name: string; readonly sessionMustHold: boolean; readonly runs?: number }
) =>
  Effect.gen(function* () {
    const statuses = new Map<number, number>()
    const offenders = new Map<string, string>()
    yield* Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(requests, async (sent) => {
          const answer = await send(base, sent).catch((error: unknown) => ({ status: 0, text: String(error) }))
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
          const label = `${describeSent(sent)} -> ${answer.status} ${answer.text.slice(0, 200)}`
          const kind =
            answer.status === 0
              ? "no answer"
              : answer.status >= 500
                ? `${answer.status} on ${sent.method} ${sent.path.replace(/\/v1\/environments\/[^/?]+/, "/v1/environments/{id}").split("?")[0]}`
                : answer.status >= 400 && !isErrorBody(parse(answer.text))
                  ? `${answer.status} without the error body`
                  : answer.status < 300 && answer.status !== 204 && typeof parse(answer.text) !== "object"
                    ? "success without a JSON body"
                    : options.sessionMustHold && answer.status === 401
                      ? "the valid session was refused"
                      : undefined
          if (kind !== undefined && !offenders.has(kind)) offenders.set(kind, label)
          return true
        }),
        { seed: SEED, numRuns: options.runs ?? RUNS }
      )
    )
    expect(
      [...offenders].map(([kind, example]) => `${kind}: ${example}`),
      `${options.name}: answers that break the conventions`
    ).toEqual([])
    return statuses
  })

const withJson = (headers: Record<string, string>, body: Body) => ({
  headers: body.contentType === undefined ? headers : { ...headers, "content-type": body.contentType },
  body: body.raw
})

const setUp = (base: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    const other = yield* tenant(base)
    const victim = yield* signUp(base, uniqueName("victim"))
    const staging = yield* createEnvironment(owner, "staging")
    const key = yield* createKey(owner)
    const otherKey = yield* createKey(other)
    // Pending invites for addresses the generators use, so my-workspaces has invites to accept.
    for (const email of INVITED) {
      yield* owner.api.team.createInvite({ payload: { email, role: "member" } })
    }
    return {
      base,
      owner,
      other,
      victim: { username: victim.username, password: victim.password },
      stagingId: staging.id,
      keyId: key.api_key.id,
      otherKeyId: otherKey.api_key.id
    } satisfies World
  })

const count = (statuses: Map<number, number>, predicate: (status: number) => boolean) =>
  [...statuses].filter(([status]) => predicate(status)).reduce((sum, [, n]) => sum + n, 0)

const FUZZ_TIMEOUT = 120_000

layer(testServer("database", { INTERNAL_API_KEY: INTERNAL_KEY, LOGIN_FAILURE_LIMIT: "1000000" }), SERVER_OPTIONS)(
  "identity endpoints under random input",
  (it) => {
    describe("auth (no credential, or the internal key)", () => {
      const authEndpoints: ReadonlyArray<readonly [string, ReadonlyArray<string>, string | undefined]> = [
        ["/v1/auth/signup", ["username", "password"], undefined],
        ["/v1/auth/login", ["username", "password"], undefined],
        ["/v1/auth/password", ["username", "current_password", "new_password"], undefined],
        ["/v1/identity/oauth-session", ["email", "provider", "provider_subject"], INTERNAL_KEY]
      ]
      for (const [path, fields, token] of authEndpoints) {
        it.effect(
          `POST ${path}: never 5xx, 4xx with the error body`,
          () =>
            Effect.gen(function* () {
              const world = yield* setUp(yield* baseUrl)
              const requests = bodies(world, fields).map((body): Sent => ({
                method: "POST",
                path,
                ...withJson(token === undefined ? {} : { authorization: `Bearer ${token}` }, body)
              }))
              const statuses = yield* fuzz(world.base, requests, {
                name: `POST ${path}`,
                sessionMustHold: token !== undefined
              })
              expect(
                count(statuses, (s) => s === 400),
                JSON.stringify([...statuses])
              ).toBeGreaterThan(0)
            }),
          FUZZ_TIMEOUT
        )
      }
    })

    describe("workspace endpoints (owner session)", () => {
      const bodyEndpoints: ReadonlyArray<{
        readonly method: string
        readonly label: string
        readonly paths: (world: World) => fc.Arbitrary<string>
        readonly fields: ReadonlyArray<string>
        /** A random body is valid often enough that some 2xx must show up. */
        readonly someSuccess: boolean
      }> = [
        {
          method: "POST",
          label: "/v1/api-keys",
          paths: () => fc.constant("/v1/api-keys"),
          fields: ["name", "environment_id"],
          someSuccess: true
        },
        {
          method: "PATCH",
          label: "/v1/api-keys/batch/revoke",
          paths: () => fc.constant("/v1/api-keys/batch/revoke"),
          fields: ["ids"],
          someSuccess: true
        },
        {
          method: "POST",
          label: "/v1/team/my-workspaces",
          paths: () => fc.constant("/v1/team/my-workspaces"),
          fields: ["name"],
          someSuccess: true
        },
        {
          method: "POST",
          label: "/v1/team/invites",
          paths: () => fc.constant("/v1/team/invites"),
          fields: ["email", "role"],
          someSuccess: true
        },
        {
          method: "PATCH",
          label: "/v1/settings",
          paths: () => fc.constant("/v1/settings"),
          fields: [
            "approval_checker_mode",
            "flow_checker_mode",
            "memory_checker_mode",
            "param_checker_mode",
            "data_handling_mode",
            "default_action",
            "escalation_webhook_url",
            "retention_days",
            "telemetry_enabled",
            "config"
          ],
          someSuccess: true
        },
        {
          method: "POST",
          label: "/v1/environments",
          paths: () => fc.constant("/v1/environments"),
          fields: ["name", "slug", "description"],
          someSuccess: true
        },
        {
          method: "PATCH",
          label: "/v1/environments/{id}",
          paths: (world) => pathIds(world).map((id) => `/v1/environments/${id}`),
          fields: ["name", "description", "slug"],
          someSuccess: true
        },
        {
          method: "PUT",
          label: "/v1/environments/{id}/checker-modes",
          paths: (world) => pathIds(world).map((id) => `/v1/environments/${id}/checker-modes`),
          fields: ["approval_checker_mode", "flow_checker_mode", "memory_checker_mode", "param_checker_mode"],
          someSuccess: true
        }
      ]
      for (const { fields, label, method, paths, someSuccess } of bodyEndpoints) {
        it.effect(
          `${method} ${label}: never 5xx, 4xx with the error body`,
          () =>
            Effect.gen(function* () {
              const world = yield* setUp(yield* baseUrl)
              const requests = fc
                .record({ path: paths(world), body: bodies(world, fields), workspace: workspaceHeader(world) })
                .map(({ body, path, workspace }): Sent => {
                  const headers: Record<string, string> = { authorization: `Bearer ${world.owner.jwt}` }
                  if (workspace !== undefined) headers["x-service-workspace-id"] = workspace
                  return { method, path, ...withJson(headers, body) }
                })
              const statuses = yield* fuzz(world.base, requests, { name: `${method} ${label}`, sessionMustHold: true })
              const seen = JSON.stringify([...statuses])
              expect(
                count(statuses, (s) => s === 400),
                `${label} ${seen}`
              ).toBeGreaterThan(0)
              if (someSuccess)
                expect(
                  count(statuses, (s) => s < 300),
                  `${label} ${seen}`
                ).toBeGreaterThan(0)
              // The owner's session and workspace survived it all.
              yield* world.owner.api.settings.getSettings({})
            }),
          FUZZ_TIMEOUT
        )
      }

      it.effect(
        "GET and DELETE routes with random ids, queries and workspace headers: never 5xx",
        () =>
          Effect.gen(function* () {
            const world = yield* setUp(yield* baseUrl)
            const route = fc.oneof(
              fc.constantFrom("GET /v1/api-keys", "GET /v1/team/members", "GET /v1/settings", "GET /v1/environments"),
              pathIds(world).map((id) => `GET /v1/environments/${id}/checker-modes`),
              pathIds(world).map((id) => `DELETE /v1/environments/${id}`)
            )
            const requests = fc
              .record({ route, query: queries, workspace: workspaceHeader(world) })
              .map(({ query, route, workspace }): Sent => {
                const [method, path] = route.split(" ") as [string, string]
                const headers: Record<string, string> = { authorization: `Bearer ${world.owner.jwt}` }
                if (workspace !== undefined) headers["x-service-workspace-id"] = workspace
                return { method, path: `${path}${query}`, headers }
              })
            const statuses = yield* fuzz(world.base, requests, { name: "GET/DELETE routes", sessionMustHold: true })
            expect(
              count(statuses, (s) => s === 200),
              JSON.stringify([...statuses])
            ).toBeGreaterThan(0)
            expect(
              count(statuses, (s) => s === 404),
              JSON.stringify([...statuses])
            ).toBeGreaterThan(0)
          }),
        FUZZ_TIMEOUT
      )

      it.effect(
        "GET /v1/team/my-workspaces with random user ids, emails and credentials: never 5xx",
        () =>
          Effect.gen(function* () {
            const world = yield* setUp(yield* baseUrl)
            const requests = fc
              .record({
                userId: fc.option(
                  fc.oneof(
                    fc.constantFrom(world.owner.user_id, world.owner.user_id.toUpperCase(), world.other.user_id, ""),
                    { weight: 2, arbitrary: fc.uuid() },
                    printable(40)
                  ),
                  { nil: undefined, freq: 8 }
                ),
                email: fc.option(
                  fc.oneof(
                    { weight: 3, arbitrary: fc.constantFrom(...INVITED, "INVITED1@example.com") },
                    fc.constantFrom("", " ", "no-at-sign", "a@b"),
                    fc.emailAddress(),
                    printable(60)
                  ),
                  { nil: undefined, freq: 3 }
                ),
                token: fc.constantFrom(world.owner.jwt, INTERNAL_KEY, "garbage", undefined),
                query: queries
              })
              .map(({ email, query, token, userId }): Sent => {
                const headers: Record<string, string> = {}
                if (token !== undefined) headers["authorization"] = `Bearer ${token}`
                if (userId !== undefined) headers["x-service-user-id"] = userId
                if (email !== undefined) headers["x-service-user-email"] = email
                return { method: "GET", path: `/v1/team/my-workspaces${query}`, headers }
              })
            const statuses = yield* fuzz(world.base, requests, {
              name: "GET /v1/team/my-workspaces",
              sessionMustHold: false
            })
            expect(
              count(statuses, (s) => s === 200),
              JSON.stringify([...statuses])
            ).toBeGreaterThan(0)
          }),
        FUZZ_TIMEOUT
      )
    })
  }
)
