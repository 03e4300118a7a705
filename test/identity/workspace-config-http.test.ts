/**
 * Environments (with their checker-mode overrides) and workspace settings
 * over HTTP against the real service and PostgreSQL. A second server runs
 * with HTTP_URL_ALLOWLIST=127.0.0.1,localhost for the plain-http webhook rule.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { baseUrl, testServer } from "../support/TestServer.js"
import {
  call,
  createEnvironment,
  expectError,
  expectStatus,
  expectValidation,
  SERVER_OPTIONS,
  tenant,
  TIMESTAMP
} from "./http-helpers.js"

interface EnvironmentBody {
  readonly id: string
  readonly name: string
  readonly slug: string
  readonly description: string | null
  readonly is_default: boolean
  readonly created_at: string
  readonly updated_at: string
}

const MODES = ["approval_checker_mode", "flow_checker_mode", "memory_checker_mode", "param_checker_mode"] as const

const listEnvironments = (base: string, token: string) =>
  Effect.map(
    call(base, "GET", "/v1/environments", { token }),
    (response) => (expectStatus(response, 200) as { environments: Array<EnvironmentBody> }).environments
  )

const getSettings = (base: string, token: string) =>
  Effect.map(call(base, "GET", "/v1/settings", { token }), (response) => expectStatus(response, 200))

const patchSettings = (base: string, token: string, body: unknown) =>
  call(base, "PATCH", "/v1/settings", { token, body })

const tick = Effect.sleep("5 millis")

layer(testServer("database"), SERVER_OPTIONS)("environments and settings over HTTP", (it) => {
  describe("environments", () => {
    it.effect("a new workspace has one environment: the default, slug production", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const environments = yield* listEnvironments(base, owner.jwt)
        expect(environments).toHaveLength(1)
        const [production] = environments
        expect(production).toMatchObject({ id: owner.defaultEnvironmentId, slug: "production", is_default: true })
        expect(Object.keys(production!).sort()).toEqual(
          ["created_at", "description", "id", "is_default", "name", "slug", "updated_at"].sort()
        )
        expect(production!.created_at).toMatch(TIMESTAMP)
        expect(production!.updated_at).toMatch(TIMESTAMP)
      })
    )

    it.effect("POST creates a non-default environment (201) that the list then shows", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const response = yield* call(base, "POST", "/v1/environments", {
          token: owner.jwt,
          body: { name: "Staging", slug: "staging" }
        })
        const staging = expectStatus(response, 201) as EnvironmentBody
        expect(staging).toMatchObject({ name: "Staging", slug: "staging", is_default: false, description: null })
        expect(typeof staging.id).toBe("string")
        expect(staging.created_at).toMatch(TIMESTAMP)
        const withDescription = expectStatus(
          yield* call(base, "POST", "/v1/environments", {
            token: owner.jwt,
            body: { name: "QA", slug: "qa", description: "Manual testing" }
          }),
          201
        )
        expect(withDescription.description).toBe("Manual testing")
        const environments = yield* listEnvironments(base, owner.jwt)
        expect(environments.map((e) => e.slug).sort()).toEqual(["production", "qa", "staging"])
        expect(environments.filter((e) => e.is_default).map((e) => e.slug)).toEqual(["production"])
      })
    )

    it.effect("slugs are [a-z0-9-]{1,63}: anything else answers 400 naming slug", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const slug of ["", "Staging", "has space", "under_score", "dot.ted", "ünï", "a".repeat(64), 5, null]) {
          const response = yield* call(base, "POST", "/v1/environments", {
            token: owner.jwt,
            body: { name: "x", slug }
          })
          expectValidation(response, "slug")
        }
        expectValidation(
          yield* call(base, "POST", "/v1/environments", { token: owner.jwt, body: { name: "x" } }),
          "slug"
        )
        // The edges are accepted.
        for (const slug of ["a", "0", "-", "a".repeat(63), "eu-west-1"]) {
          expectStatus(
            yield* call(base, "POST", "/v1/environments", { token: owner.jwt, body: { name: slug, slug } }),
            201
          )
        }
      })
    )

    it.effect("a missing or empty name answers 400 naming name; a wrong content type 415; malformed JSON 400", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        expectValidation(
          yield* call(base, "POST", "/v1/environments", { token: owner.jwt, body: { slug: "ok" } }),
          "name"
        )
        expectValidation(
          yield* call(base, "POST", "/v1/environments", { token: owner.jwt, body: { name: "", slug: "ok" } }),
          "name"
        )
        expectValidation(
          yield* call(base, "POST", "/v1/environments", {
            token: owner.jwt,
            body: { name: "x", slug: "ok", description: 5 }
          }),
          "description"
        )
        expectError(
          yield* call(base, "POST", "/v1/environments", {
            token: owner.jwt,
            raw: JSON.stringify({ name: "x", slug: "ok" }),
            contentType: "text/plain"
          }),
          415,
          "unsupported_media_type"
        )
        expectError(
          yield* call(base, "POST", "/v1/environments", { token: owner.jwt, raw: "{" }),
          400,
          "malformed_json"
        )
        expect(yield* listEnvironments(base, owner.jwt)).toHaveLength(1)
      })
    )

    it.effect("a duplicate slug answers 409 in the same workspace; another workspace may use it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        yield* createEnvironment(base, owner, "staging")
        for (const slug of ["staging", "production"]) {
          const response = yield* call(base, "POST", "/v1/environments", {
            token: owner.jwt,
            body: { name: "Again", slug }
          })
          expectError(response, 409, "environment_slug_taken")
        }
        yield* createEnvironment(base, other, "staging")
        expect((yield* listEnvironments(base, owner.jwt)).map((e) => e.slug).sort()).toEqual(["production", "staging"])
      })
    )

    it.effect("PATCH updates name and description (partial), stamps updated_at, keeps the rest", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = (yield* createEnvironment(base, owner, "staging")) as unknown as EnvironmentBody
        yield* tick
        const renamed = expectStatus(
          yield* call(base, "PATCH", `/v1/environments/${staging.id}`, {
            token: owner.jwt,
            body: { name: "Pre-production" }
          }),
          200
        ) as EnvironmentBody
        expect(renamed).toMatchObject({
          id: staging.id,
          name: "Pre-production",
          slug: "staging",
          description: null,
          is_default: false
        })
        expect(Date.parse(renamed.updated_at)).toBeGreaterThan(Date.parse(staging.updated_at))
        expect(renamed.created_at).toBe(staging.created_at)

        const described = expectStatus(
          yield* call(base, "PATCH", `/v1/environments/${staging.id}`, {
            token: owner.jwt,
            body: { description: "Last stop before production" }
          }),
          200
        ) as EnvironmentBody
        expect(described).toMatchObject({ name: "Pre-production", description: "Last stop before production" })

        const unchanged = expectStatus(
          yield* call(base, "PATCH", `/v1/environments/${staging.id}`, { token: owner.jwt, body: {} }),
          200
        ) as EnvironmentBody
        expect(unchanged).toMatchObject({ name: "Pre-production", description: "Last stop before production" })

        const cleared = expectStatus(
          yield* call(base, "PATCH", `/v1/environments/${staging.id}`, {
            token: owner.jwt,
            body: { description: null }
          }),
          200
        ) as EnvironmentBody
        expect(cleared).toMatchObject({ name: "Pre-production", description: null })

        // The default environment may be renamed too; it stays the default.
        const production = expectStatus(
          yield* call(base, "PATCH", `/v1/environments/${owner.defaultEnvironmentId}`, {
            token: owner.jwt,
            body: { name: "Live" }
          }),
          200
        ) as EnvironmentBody
        expect(production).toMatchObject({ name: "Live", slug: "production", is_default: true })

        const listed = yield* listEnvironments(base, owner.jwt)
        expect(listed.find((e) => e.id === staging.id)).toMatchObject({ name: "Pre-production", description: null })
      })
    )

    it.effect("PATCH with a bad body answers 400 naming the field; an unknown id 404; 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(base, owner, "staging")
        const path = `/v1/environments/${staging.id}`
        expectValidation(yield* call(base, "PATCH", path, { token: owner.jwt, body: { name: "" } }), "name")
        expectValidation(yield* call(base, "PATCH", path, { token: owner.jwt, body: { name: 5 } }), "name")
        expectValidation(
          yield* call(base, "PATCH", path, { token: owner.jwt, body: { description: [] } }),
          "description"
        )
        expectError(
          yield* call(base, "PATCH", "/v1/environments/env_does_not_exist", { token: owner.jwt, body: { name: "x" } }),
          404,
          "environment_not_found"
        )
        expectError(
          yield* call(base, "PATCH", path, {
            token: owner.jwt,
            raw: JSON.stringify({ name: "x" }),
            contentType: "text/plain"
          }),
          415,
          "unsupported_media_type"
        )
        expect((yield* listEnvironments(base, owner.jwt)).find((e) => e.id === staging.id)?.name).toBe(staging.name)
      })
    )

    it.effect("DELETE answers 204 with an empty body; then the environment is gone (404)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(base, owner, "staging")
        const deleted = yield* call(base, "DELETE", `/v1/environments/${staging.id}`, { token: owner.jwt })
        expect(deleted.status, deleted.text).toBe(204)
        expect(deleted.text).toBe("")
        expect((yield* listEnvironments(base, owner.jwt)).map((e) => e.id)).toEqual([owner.defaultEnvironmentId])
        expectError(
          yield* call(base, "DELETE", `/v1/environments/${staging.id}`, { token: owner.jwt }),
          404,
          "environment_not_found"
        )
        expectError(
          yield* call(base, "PATCH", `/v1/environments/${staging.id}`, { token: owner.jwt, body: { name: "x" } }),
          404
        )
        expectError(yield* call(base, "GET", `/v1/environments/${staging.id}/checker-modes`, { token: owner.jwt }), 404)
        // The slug is free again.
        yield* createEnvironment(base, owner, "staging")
      })
    )

    it.effect("concurrent creates of one slug: exactly one 201, the others 409", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const responses = yield* Effect.all(
          Array.from({ length: 6 }, () =>
            call(base, "POST", "/v1/environments", { token: owner.jwt, body: { name: "Race", slug: "race" } })
          ),
          { concurrency: "unbounded" }
        )
        expect(responses.map((response) => response.status).sort()).toEqual([201, 409, 409, 409, 409, 409])
        expect((yield* listEnvironments(base, owner.jwt)).filter((e) => e.slug === "race")).toHaveLength(1)
      })
    )

    it.effect("the default environment cannot be deleted (409)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const response = yield* call(base, "DELETE", `/v1/environments/${owner.defaultEnvironmentId}`, {
          token: owner.jwt
        })
        expectError(response, 409, "default_environment")
        expect((yield* listEnvironments(base, owner.jwt)).map((e) => e.id)).toEqual([owner.defaultEnvironmentId])
      })
    )

    it.effect("without a credential every environment endpoint answers 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const id = owner.defaultEnvironmentId
        for (const [method, path, body] of [
          ["GET", "/v1/environments", undefined],
          ["POST", "/v1/environments", { name: "x", slug: "x" }],
          ["PATCH", `/v1/environments/${id}`, { name: "x" }],
          ["DELETE", `/v1/environments/${id}`, undefined],
          ["GET", `/v1/environments/${id}/checker-modes`, undefined],
          ["PUT", `/v1/environments/${id}/checker-modes`, {}]
        ] as const) {
          expectError(yield* call(base, method, path, { body }), 401)
        }
      })
    )
  })

  describe("checker modes", () => {
    it.effect("GET of a fresh environment: every mode null (inherits), updated_at null", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const response = yield* call(base, "GET", `/v1/environments/${owner.defaultEnvironmentId}/checker-modes`, {
          token: owner.jwt
        })
        expect(expectStatus(response, 200)).toEqual({
          approval_checker_mode: null,
          flow_checker_mode: null,
          memory_checker_mode: null,
          param_checker_mode: null,
          updated_at: null
        })
      })
    )

    it.effect("PUT replaces the overrides: omitted and null inherit; updated_at is stamped by the server", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(base, owner)
        const path = `/v1/environments/${staging.id}/checker-modes`
        const before = Date.now()
        const first = expectStatus(
          yield* call(base, "PUT", path, {
            token: owner.jwt,
            body: { approval_checker_mode: "enforce", flow_checker_mode: "observe", memory_checker_mode: null }
          }),
          200
        )
        expect(first).toMatchObject({
          approval_checker_mode: "enforce",
          flow_checker_mode: "observe",
          memory_checker_mode: null,
          param_checker_mode: null
        })
        expect(first.updated_at).toMatch(TIMESTAMP)
        expect(Date.parse(first.updated_at)).toBeGreaterThanOrEqual(before - 1_000)
        expect(expectStatus(yield* call(base, "GET", path, { token: owner.jwt }), 200)).toEqual(first)

        // Replace, not merge: what is left out goes back to inheriting.
        yield* tick
        const second = expectStatus(
          yield* call(base, "PUT", path, { token: owner.jwt, body: { param_checker_mode: "off" } }),
          200
        )
        expect(second).toMatchObject({
          approval_checker_mode: null,
          flow_checker_mode: null,
          memory_checker_mode: null,
          param_checker_mode: "off"
        })
        expect(Date.parse(second.updated_at)).toBeGreaterThan(Date.parse(first.updated_at))

        const all = expectStatus(
          yield* call(base, "PUT", path, {
            token: owner.jwt,
            body: Object.fromEntries(MODES.map((mode) => [mode, "observe"]))
          }),
          200
        )
        for (const mode of MODES) expect(all[mode]).toBe("observe")

        const cleared = expectStatus(yield* call(base, "PUT", path, { token: owner.jwt, body: {} }), 200)
        for (const mode of MODES) expect(cleared[mode]).toBeNull()
        expect(cleared.updated_at).toMatch(TIMESTAMP)

        // The workspace-level modes are untouched by overrides.
        const settings = yield* getSettings(base, owner.jwt)
        for (const mode of MODES) expect(settings[mode]).toBe("off")
        // Another environment keeps its own (none).
        const other = expectStatus(
          yield* call(base, "GET", `/v1/environments/${owner.defaultEnvironmentId}/checker-modes`, {
            token: owner.jwt
          }),
          200
        )
        expect(other.updated_at).toBeNull()
      })
    )

    it.effect("updated_at in the body, an unknown mode or a non-object answers 400 naming the field", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const path = `/v1/environments/${owner.defaultEnvironmentId}/checker-modes`
        for (const updated_at of ["2026-11-22T10:00:00.000Z", null, 0]) {
          expectValidation(
            yield* call(base, "PUT", path, {
              token: owner.jwt,
              body: { approval_checker_mode: "enforce", updated_at }
            }),
            "updated_at"
          )
        }
        for (const mode of MODES) {
          for (const value of ["block", "ENFORCE", "", 1, true]) {
            expectValidation(yield* call(base, "PUT", path, { token: owner.jwt, body: { [mode]: value } }), mode)
          }
        }
        for (const raw of ["[]", '"enforce"', "null", "1"]) {
          expectError(yield* call(base, "PUT", path, { token: owner.jwt, raw }), 400, "validation_failed")
        }
        expectError(
          yield* call(base, "PUT", path, { token: owner.jwt, raw: "{}", contentType: "text/plain" }),
          415,
          "unsupported_media_type"
        )
        // Nothing was stored.
        expect(expectStatus(yield* call(base, "GET", path, { token: owner.jwt }), 200).updated_at).toBeNull()
      })
    )

    it.effect("an unknown environment id answers 404 for GET and PUT", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const path = "/v1/environments/env_nope/checker-modes"
        expectError(yield* call(base, "GET", path, { token: owner.jwt }), 404, "environment_not_found")
        expectError(
          yield* call(base, "PUT", path, { token: owner.jwt, body: { approval_checker_mode: "enforce" } }),
          404,
          "environment_not_found"
        )
      })
    )
  })

  describe("settings", () => {
    it.effect("GET answers the defaults of a new workspace", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const settings = yield* getSettings(base, owner.jwt)
        expect(settings).toEqual({
          approval_checker_mode: "off",
          flow_checker_mode: "off",
          memory_checker_mode: "off",
          param_checker_mode: "off",
          data_handling_mode: "raw_allowed",
          default_action: "permit",
          escalation_webhook_url: null,
          retention_days: "90",
          telemetry_enabled: true,
          config: {},
          updated_at: expect.stringMatching(TIMESTAMP)
        })
      })
    )

    it.effect("PATCH {} is accepted and changes nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const before = yield* getSettings(base, owner.jwt)
        const after = expectStatus(yield* patchSettings(base, owner.jwt, {}), 200)
        expect(after).toEqual(before)
      })
    )

    it.effect("PATCH is partial: the given fields change, the others stay, updated_at moves", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const before = yield* getSettings(base, owner.jwt)
        yield* tick
        const patch = {
          approval_checker_mode: "enforce",
          flow_checker_mode: "observe",
          data_handling_mode: "redacted",
          default_action: "deny",
          retention_days: "30",
          telemetry_enabled: false,
          escalation_webhook_url: "https://hooks.example.com/guardrail"
        }
        const after = expectStatus(yield* patchSettings(base, owner.jwt, patch), 200)
        expect(after).toMatchObject({ ...patch, memory_checker_mode: "off", param_checker_mode: "off", config: {} })
        expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before.updated_at))
        expect(yield* getSettings(base, owner.jwt)).toEqual(after)

        const again = expectStatus(yield* patchSettings(base, owner.jwt, { default_action: "defer" }), 200)
        expect(again).toMatchObject({ ...patch, default_action: "defer" })

        // null clears the webhook.
        const cleared = expectStatus(yield* patchSettings(base, owner.jwt, { escalation_webhook_url: null }), 200)
        expect(cleared.escalation_webhook_url).toBeNull()
        expect(cleared.default_action).toBe("defer")
      })
    )

    it.effect("enum fields refuse unknown values with 400 naming the field", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const cases: ReadonlyArray<readonly [string, unknown]> = [
          ...MODES.map((mode) => [mode, "block"] as const),
          ["approval_checker_mode", null],
          ["data_handling_mode", "raw"],
          ["default_action", "rewrite"],
          ["default_action", "allow"],
          ["telemetry_enabled", "yes"],
          ["telemetry_enabled", null]
        ]
        for (const [field, value] of cases) {
          expectValidation(yield* patchSettings(base, owner.jwt, { [field]: value }), field)
        }
        expect(yield* getSettings(base, owner.jwt)).toMatchObject({
          default_action: "permit",
          data_handling_mode: "raw_allowed"
        })
      })
    )

    it.effect("retention_days must be a positive whole number as a string", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const retention_days of ["0", "-1", "1.5", "abc", "", " 30", "030", 30, null, "1e3"]) {
          expectValidation(yield* patchSettings(base, owner.jwt, { retention_days }), "retention_days")
        }
        for (const retention_days of ["1", "7", "365", "3650"]) {
          expect(expectStatus(yield* patchSettings(base, owner.jwt, { retention_days }), 200).retention_days).toBe(
            retention_days
          )
        }
      })
    )

    it.effect("escalation_webhook_url must be https (plain http only to allowlisted hosts: none here)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const url of [
          "http://hooks.example.com/x",
          "http://127.0.0.1:9/x",
          "http://localhost/x",
          "ftp://hooks.example.com/x",
          "javascript:alert(1)",
          "not a url",
          "",
          "//hooks.example.com/x"
        ]) {
          expectValidation(
            yield* patchSettings(base, owner.jwt, { escalation_webhook_url: url }),
            "escalation_webhook_url"
          )
        }
        expectValidation(yield* patchSettings(base, owner.jwt, { escalation_webhook_url: 5 }), "escalation_webhook_url")
        expect((yield* getSettings(base, owner.jwt)).escalation_webhook_url).toBeNull()
        const ok = expectStatus(
          yield* patchSettings(base, owner.jwt, { escalation_webhook_url: "https://hooks.example.com:8443/a?b=c" }),
          200
        )
        expect(ok.escalation_webhook_url).toBe("https://hooks.example.com:8443/a?b=c")
      })
    )

    it.effect("config.llm_budget is validated {cap_minor integer >= 0, currency usd, window day|month}", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const good = { cap_minor: 5000, currency: "usd", window: "month" }
        const bad: ReadonlyArray<readonly [string, unknown]> = [
          ["config.llm_budget.currency", { ...good, currency: "eur" }],
          ["config.llm_budget.currency", { ...good, currency: "USD" }],
          ["config.llm_budget.window", { ...good, window: "week" }],
          ["config.llm_budget.cap_minor", { ...good, cap_minor: -1 }],
          ["config.llm_budget.cap_minor", { ...good, cap_minor: 1.5 }],
          ["config.llm_budget.cap_minor", { ...good, cap_minor: "5000" }],
          ["config.llm_budget.cap_minor", { currency: "usd", window: "day" }],
          ["config.llm_budget", "5000"],
          ["config.llm_budget", [good]]
        ]
        for (const [path, llm_budget] of bad) {
          expectValidation(yield* patchSettings(base, owner.jwt, { config: { llm_budget } }), path)
        }
        expectValidation(
          yield* patchSettings(base, owner.jwt, { config: { action_budget: { cap: -5 } } }),
          "config.action_budget.cap"
        )
        for (const config of ["x", 5, [], true, null]) {
          expectValidation(yield* patchSettings(base, owner.jwt, { config }), "config")
        }
        expect((yield* getSettings(base, owner.jwt)).config).toEqual({})

        const stored = expectStatus(yield* patchSettings(base, owner.jwt, { config: { llm_budget: good } }), 200)
        expect(stored.config).toEqual({ llm_budget: good })
        const day = { cap_minor: 0, currency: "usd", window: "day" }
        expect(
          expectStatus(yield* patchSettings(base, owner.jwt, { config: { llm_budget: day } }), 200).config
        ).toEqual({
          llm_budget: day
        })
      })
    )

    it.effect("config is merged key by key; a null value removes the key", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const budget = { cap_minor: 100, currency: "usd", window: "day" }
        expectStatus(
          yield* patchSettings(base, owner.jwt, { config: { llm_budget: budget, team: { name: "a" } } }),
          200
        )
        const merged = expectStatus(
          yield* patchSettings(base, owner.jwt, { config: { action_budget: { cap: 10 }, flags: ["x", 1, null] } }),
          200
        )
        expect(merged.config).toEqual({
          llm_budget: budget,
          team: { name: "a" },
          action_budget: { cap: 10 },
          flags: ["x", 1, null]
        })
        // A key's value is replaced whole (top-level merge), null removes, others stay.
        const replaced = expectStatus(
          yield* patchSettings(base, owner.jwt, { config: { team: { size: 3 }, llm_budget: null, flags: null } }),
          200
        )
        expect(replaced.config).toEqual({ team: { size: 3 }, action_budget: { cap: 10 } })
        // config: {} and other fields leave config as it is.
        expect(expectStatus(yield* patchSettings(base, owner.jwt, { config: {} }), 200).config).toEqual(replaced.config)
        expect(expectStatus(yield* patchSettings(base, owner.jwt, { default_action: "defer" }), 200).config).toEqual(
          replaced.config
        )
        expect((yield* getSettings(base, owner.jwt)).config).toEqual(replaced.config)
        // Removing a key that is not there is fine.
        expect(
          expectStatus(yield* patchSettings(base, owner.jwt, { config: { never_set: null } }), 200).config
        ).toEqual(replaced.config)
      })
    )

    // Valid JSON that PostgreSQL's jsonb cannot store: the client gets a 4xx, not a 500.
    it.effect("config values jsonb cannot hold (deep nesting, a lone surrogate) answer 4xx, not 500", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const bodies = [
          `{"config":{"deep":${"[".repeat(10_000)}${"]".repeat(10_000)}}}`,
          `{"config":{"deep":${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}}}`,
          '{"config":{"note":"\\ud800"}}',
          '{"config":{"\\udfff":1}}'
        ]
        for (const raw of bodies) {
          const response = yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, raw })
          expect([400, 413], `${raw.slice(0, 40)}: ${response.text}`).toContain(response.status)
          expectError(response, response.status)
        }
        expect((yield* getSettings(base, owner.jwt)).config).toEqual({})
      })
    )

    it.effect("malformed JSON 400, a non-object body 400, a wrong content type 415, no credential 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        expectError(yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, raw: "{" }), 400, "malformed_json")
        for (const raw of ["[]", "null", '"x"', "7"]) {
          expectError(yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, raw }), 400, "validation_failed")
        }
        expectError(
          yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, raw: "{}", contentType: "text/plain" }),
          415,
          "unsupported_media_type"
        )
        expectError(yield* call(base, "PATCH", "/v1/settings", { body: {} }), 401)
        expectError(yield* call(base, "GET", "/v1/settings"), 401)
      })
    )
  })
})

// ---------------------------------------------------------------- plain-http allowlist

layer(testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1,localhost" }), SERVER_OPTIONS)(
  "settings over HTTP (HTTP_URL_ALLOWLIST=127.0.0.1,localhost)",
  (it) => {
    it.effect("plain http is accepted for allowlisted hosts only", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        for (const url of ["http://127.0.0.1:8080/hook", "http://localhost/hook", "http://LOCALHOST:9/x"]) {
          const response = yield* patchSettings(base, owner.jwt, { escalation_webhook_url: url })
          const settings = expectStatus(response, 200)
          expect(new URL(settings.escalation_webhook_url).protocol).toBe("http:")
        }
        for (const url of [
          "http://hooks.example.com/x",
          "http://127.0.0.2/x",
          "http://127.0.0.1.nip.io/x",
          "http://localhost.example.com/x",
          "http://127.0.0.1@evil.example.com/x",
          "http://[::1]/x"
        ]) {
          expectValidation(
            yield* patchSettings(base, owner.jwt, { escalation_webhook_url: url }),
            "escalation_webhook_url"
          )
        }
        // https anywhere, still.
        expectStatus(
          yield* patchSettings(base, owner.jwt, { escalation_webhook_url: "https://hooks.example.com/x" }),
          200
        )
      })
    )
  }
)
