/**
 * The generators of the identity fuzz suites (identity-fuzz-auth.test.ts,
 * identity-fuzz-workspace.test.ts): the tenants a run aims at (`World`), and
 * random bodies, path ids, workspace headers and queries, mostly near-valid
 * for the endpoint, sometimes hostile.
 */
import fc from "fast-check"
import type { GuardrailClient } from "../support/Api.js"
import { sha256Hex } from "../support/Tenants.js"

export interface World {
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
export const printable = (max: number) => fc.stringMatching(new RegExp(`^[\\x20-\\x7e]{0,${max}}$`))

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

export interface Body {
  readonly raw?: string | undefined
  readonly contentType?: string | undefined
}

/** Random bodies: mostly JSON objects with the right field names; also any JSON, text and odd content types. */
export const bodies = (world: World, fields: ReadonlyArray<string>): fc.Arbitrary<Body> =>
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
export const pathIds = (world: World) =>
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
export const workspaceHeader = (world: World) =>
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

export const queries = fc.constantFrom("", "", "", "?limit=-1", "?limit=abc", "?cursor=%FF", "?a[b]=1", "?__proto__=1")
