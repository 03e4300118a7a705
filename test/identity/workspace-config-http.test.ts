/**
 * Environments (with their checker-mode overrides) and workspace settings
 * over HTTP against the real service and PostgreSQL. A second server runs
 * with HTTP_URL_ALLOWLIST=127.0.0.1,localhost for the plain-http webhook rule.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { EnvironmentId } from "../../src/identity/Domain.js"
import { clientAt, expectFailure, expectInvalid, type GuardrailClient, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createEnvironment, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { answerOf, describeAnswer } from "./http-helpers.js"
import { TIMESTAMP } from "../support/Formats.js"

const MODES = ["approval_checker_mode", "flow_checker_mode", "memory_checker_mode", "param_checker_mode"] as const

interface Owner {
  readonly api: GuardrailClient
}

const listEnvironments = (owner: Owner) =>
  Effect.map(owner.api.environments.listEnvironments({}), (body) => body.environments)

const getSettings = (owner: Owner) => owner.api.settings.getSettings({})

/** PATCH /v1/settings with a body the contract allows. */
const updateSettings = (
  owner: Owner,
  payload: Parameters<GuardrailClient["settings"]["updateSettings"]>[0]["payload"]
) => owner.api.settings.updateSettings({ payload })

/** PATCH /v1/settings raw, for bodies the schema refuses (the client would not send them). */
const patchSettingsRaw = (base: string, owner: { readonly jwt: string }, body: unknown) =>
  call(base, "PATCH", "/v1/settings", { token: owner.jwt, body })

const tick = Effect.sleep("5 millis")

layer(testServer("database"), SERVER_OPTIONS)("environments and settings over HTTP", (it) => {
  describe("environments", () => {
    it.effect("a new workspace has one environment: the default, slug production", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const { body, value } = yield* withRaw(owner.api.environments.listEnvironments({ withResponse: true }))
        const environments = value.environments
        expect(environments).toHaveLength(1)
        const [production] = environments
        expect(production).toMatchObject({ id: owner.defaultEnvironmentId, slug: "production", is_default: true })
        // The environment as sent: decoding would drop any field the contract does not name.
        const [sent] = (body as { environments: ReadonlyArray<object> }).environments
        expect(Object.keys(sent!).sort()).toEqual(
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
        const created = yield* withRaw(
          owner.api.environments.createEnvironment({
            payload: { name: "Staging", slug: "staging" },
            withResponse: true
          })
        )
        expect(created.status).toBe(201)
        const staging = created.value
        expect(staging).toMatchObject({ name: "Staging", slug: "staging", is_default: false, description: null })
        expect(typeof staging.id).toBe("string")
        expect(staging.created_at).toMatch(TIMESTAMP)
        const withDescription = yield* owner.api.environments.createEnvironment({
          payload: { name: "QA", slug: "qa", description: "Manual testing" }
        })
        expect(withDescription.description).toBe("Manual testing")
        const environments = yield* listEnvironments(owner)
        expect(environments.map((e) => e.slug).sort()).toEqual(["production", "qa", "staging"])
        expect(environments.filter((e) => e.is_default).map((e) => e.slug)).toEqual(["production"])
      })
    )

    it.effect("slugs are [a-z0-9-]{1,63}: anything else answers 400 naming slug", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // Raw: slugs the schema refuses (the client would not send them).
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
          yield* owner.api.environments.createEnvironment({ payload: { name: slug, slug } })
        }
      })
    )

    // Raw: bodies the schema refuses, a wrong media type and malformed JSON.
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
        expect(yield* listEnvironments(owner)).toHaveLength(1)
      })
    )

    it.effect("a duplicate slug answers 409 in the same workspace; another workspace may use it", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const other = yield* tenant(base)
        yield* createEnvironment(owner, "staging")
        for (const slug of ["staging", "production"]) {
          yield* expectFailure(
            owner.api.environments.createEnvironment({ payload: { name: "Again", slug } }),
            409,
            "environment_slug_taken"
          )
        }
        yield* createEnvironment(other, "staging")
        expect((yield* listEnvironments(owner)).map((e) => e.slug).sort()).toEqual(["production", "staging"])
      })
    )

    it.effect("PATCH updates name and description (partial), stamps updated_at, keeps the rest", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner, "staging")
        const update = (payload: { readonly name?: string; readonly description?: string | null }) =>
          owner.api.environments.updateEnvironment({ path: { id: staging.id }, payload })
        yield* tick
        const renamed = yield* update({ name: "Pre-production" })
        expect(renamed).toMatchObject({
          id: staging.id,
          name: "Pre-production",
          slug: "staging",
          description: null,
          is_default: false
        })
        expect(Date.parse(renamed.updated_at)).toBeGreaterThan(Date.parse(staging.updated_at))
        expect(renamed.created_at).toBe(staging.created_at)

        const described = yield* update({ description: "Last stop before production" })
        expect(described).toMatchObject({ name: "Pre-production", description: "Last stop before production" })

        const unchanged = yield* update({})
        expect(unchanged).toMatchObject({ name: "Pre-production", description: "Last stop before production" })

        const cleared = yield* update({ description: null })
        expect(cleared).toMatchObject({ name: "Pre-production", description: null })

        // The default environment may be renamed too; it stays the default.
        const production = yield* owner.api.environments.updateEnvironment({
          path: { id: owner.defaultEnvironmentId },
          payload: { name: "Live" }
        })
        expect(production).toMatchObject({ name: "Live", slug: "production", is_default: true })

        const listed = yield* listEnvironments(owner)
        expect(listed.find((e) => e.id === staging.id)).toMatchObject({ name: "Pre-production", description: null })
      })
    )

    it.effect("PATCH with a bad body answers 400 naming the field; an unknown id 404; 415", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner, "staging")
        const path = `/v1/environments/${staging.id}`
        // Raw: bodies the schema refuses and a wrong media type.
        expectValidation(yield* call(base, "PATCH", path, { token: owner.jwt, body: { name: "" } }), "name")
        expectValidation(yield* call(base, "PATCH", path, { token: owner.jwt, body: { name: 5 } }), "name")
        expectValidation(
          yield* call(base, "PATCH", path, { token: owner.jwt, body: { description: [] } }),
          "description"
        )
        yield* expectFailure(
          owner.api.environments.updateEnvironment({
            path: { id: EnvironmentId.make("env_does_not_exist") },
            payload: { name: "x" }
          }),
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
        expect((yield* listEnvironments(owner)).find((e) => e.id === staging.id)?.name).toBe(staging.name)
      })
    )

    it.effect("DELETE answers 204 with an empty body; then the environment is gone (404)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const staging = yield* createEnvironment(owner, "staging")
        const path = { id: staging.id }
        const deleted = yield* withRaw(owner.api.environments.deleteEnvironment({ path, withResponse: true }))
        expect(deleted.status, deleted.text).toBe(204)
        expect(deleted.text).toBe("")
        expect((yield* listEnvironments(owner)).map((e) => e.id)).toEqual([owner.defaultEnvironmentId])
        yield* expectFailure(owner.api.environments.deleteEnvironment({ path }), 404, "environment_not_found")
        yield* expectFailure(owner.api.environments.updateEnvironment({ path, payload: { name: "x" } }), 404)
        yield* expectFailure(owner.api.environments.getCheckerModes({ path: { environment_id: staging.id } }), 404)
        // The slug is free again.
        yield* createEnvironment(owner, "staging")
      })
    )

    it.effect("concurrent creates of one slug: exactly one 201, the others 409", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const answers = yield* Effect.all(
          Array.from({ length: 6 }, () =>
            answerOf(owner.api.environments.createEnvironment({ payload: { name: "Race", slug: "race" } }), 201)
          ),
          { concurrency: "unbounded" }
        )
        expect(answers.map((answer) => answer.status).sort(), answers.map(describeAnswer).join("; ")).toEqual([
          201, 409, 409, 409, 409, 409
        ])
        expect((yield* listEnvironments(owner)).filter((e) => e.slug === "race")).toHaveLength(1)
      })
    )

    it.effect("the default environment cannot be deleted (409)", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* expectFailure(
          owner.api.environments.deleteEnvironment({ path: { id: owner.defaultEnvironmentId } }),
          409,
          "default_environment"
        )
        expect((yield* listEnvironments(owner)).map((e) => e.id)).toEqual([owner.defaultEnvironmentId])
      })
    )

    it.effect("without a credential every environment endpoint answers 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const id = owner.defaultEnvironmentId
        const anonymous = yield* clientAt(base)
        yield* expectFailure(anonymous.environments.listEnvironments({}), 401)
        yield* expectFailure(anonymous.environments.createEnvironment({ payload: { name: "x", slug: "x" } }), 401)
        yield* expectFailure(anonymous.environments.updateEnvironment({ path: { id }, payload: { name: "x" } }), 401)
        yield* expectFailure(anonymous.environments.deleteEnvironment({ path: { id } }), 401)
        yield* expectFailure(anonymous.environments.getCheckerModes({ path: { environment_id: id } }), 401)
        yield* expectFailure(
          anonymous.environments.replaceCheckerModes({ path: { environment_id: id }, payload: {} }),
          401
        )
      })
    )
  })

  describe("checker modes", () => {
    it.effect("GET of a fresh environment: every mode null (inherits), updated_at null", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const { body } = yield* withRaw(
          owner.api.environments.getCheckerModes({
            path: { environment_id: owner.defaultEnvironmentId },
            withResponse: true
          })
        )
        // The body as sent, compared whole.
        expect(body).toEqual({
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
        const staging = yield* createEnvironment(owner)
        const path = { environment_id: staging.id }
        const replace = (payload: Parameters<GuardrailClient["environments"]["replaceCheckerModes"]>[0]["payload"]) =>
          owner.api.environments.replaceCheckerModes({ path, payload })
        const before = Date.now()
        const first = yield* replace({
          approval_checker_mode: "enforce",
          flow_checker_mode: "observe",
          memory_checker_mode: null
        })
        expect(first).toMatchObject({
          approval_checker_mode: "enforce",
          flow_checker_mode: "observe",
          memory_checker_mode: null,
          param_checker_mode: null
        })
        expect(first.updated_at).toMatch(TIMESTAMP)
        expect(Date.parse(first.updated_at!)).toBeGreaterThanOrEqual(before - 1_000)
        expect(yield* owner.api.environments.getCheckerModes({ path })).toEqual(first)

        // Replace, not merge: what is left out goes back to inheriting.
        yield* tick
        const second = yield* replace({ param_checker_mode: "off" })
        expect(second).toMatchObject({
          approval_checker_mode: null,
          flow_checker_mode: null,
          memory_checker_mode: null,
          param_checker_mode: "off"
        })
        expect(Date.parse(second.updated_at!)).toBeGreaterThan(Date.parse(first.updated_at!))

        const all = yield* replace({
          approval_checker_mode: "observe",
          flow_checker_mode: "observe",
          memory_checker_mode: "observe",
          param_checker_mode: "observe"
        })
        for (const mode of MODES) expect(all[mode]).toBe("observe")

        const cleared = yield* replace({})
        for (const mode of MODES) expect(cleared[mode]).toBeNull()
        expect(cleared.updated_at).toMatch(TIMESTAMP)

        // The workspace-level modes are untouched by overrides.
        const settings = yield* getSettings(owner)
        for (const mode of MODES) expect(settings[mode]).toBe("off")
        // Another environment keeps its own (none).
        const other = yield* owner.api.environments.getCheckerModes({
          path: { environment_id: owner.defaultEnvironmentId }
        })
        expect(other.updated_at).toBeNull()
      })
    )

    // Raw: bodies the schema refuses (updated_at, unknown modes, non-objects) and a wrong media type.
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
        const stored = yield* owner.api.environments.getCheckerModes({
          path: { environment_id: owner.defaultEnvironmentId }
        })
        expect(stored.updated_at).toBeNull()
      })
    )

    it.effect("an unknown environment id answers 404 for GET and PUT", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const path = { environment_id: EnvironmentId.make("env_nope") }
        yield* expectFailure(owner.api.environments.getCheckerModes({ path }), 404, "environment_not_found")
        yield* expectFailure(
          owner.api.environments.replaceCheckerModes({ path, payload: { approval_checker_mode: "enforce" } }),
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
        const { body } = yield* withRaw(owner.api.settings.getSettings({ withResponse: true }))
        // The body as sent, compared whole.
        expect(body).toEqual({
          approval_checker_mode: "off",
          flow_checker_mode: "off",
          memory_checker_mode: "off",
          param_checker_mode: "off",
          data_handling_mode: "raw_allowed",
          default_action: "permit",
          escalation_webhook_url: null,
          retention_days: "90",
          telemetry_enabled: true,
          require_impact_before_enable: false,
          config: {},
          updated_at: expect.stringMatching(TIMESTAMP)
        })
      })
    )

    it.effect("PATCH {} is accepted and changes nothing", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const before = yield* withRaw(owner.api.settings.getSettings({ withResponse: true }))
        const after = yield* withRaw(owner.api.settings.updateSettings({ payload: {}, withResponse: true }))
        expect(after.body).toEqual(before.body)
      })
    )

    it.effect("PATCH is partial: the given fields change, the others stay, updated_at moves", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const before = yield* getSettings(owner)
        yield* tick
        const patch = {
          approval_checker_mode: "enforce",
          flow_checker_mode: "observe",
          data_handling_mode: "redacted",
          default_action: "deny",
          retention_days: "30",
          telemetry_enabled: false,
          escalation_webhook_url: "https://hooks.example.com/guardrail"
        } as const
        const after = yield* updateSettings(owner, patch)
        expect(after).toMatchObject({ ...patch, memory_checker_mode: "off", param_checker_mode: "off", config: {} })
        expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before.updated_at))
        expect(yield* getSettings(owner)).toEqual(after)

        const again = yield* updateSettings(owner, { default_action: "defer" })
        expect(again).toMatchObject({ ...patch, default_action: "defer" })

        // null clears the webhook.
        const cleared = yield* updateSettings(owner, { escalation_webhook_url: null })
        expect(cleared.escalation_webhook_url).toBeNull()
        expect(cleared.default_action).toBe("defer")
      })
    )

    // Raw: values the schema refuses (the client would not send them).
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
          expectValidation(yield* patchSettingsRaw(base, owner, { [field]: value }), field)
        }
        expect(yield* getSettings(owner)).toMatchObject({
          default_action: "permit",
          data_handling_mode: "raw_allowed"
        })
      })
    )

    it.effect("retention_days must be a positive whole number as a string", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // Raw: values the schema refuses.
        for (const retention_days of ["0", "-1", "1.5", "abc", "", " 30", "030", 30, null, "1e3"]) {
          expectValidation(yield* patchSettingsRaw(base, owner, { retention_days }), "retention_days")
        }
        for (const retention_days of ["1", "7", "365", "3650"]) {
          expect((yield* updateSettings(owner, { retention_days })).retention_days).toBe(retention_days)
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
          yield* expectInvalid(updateSettings(owner, { escalation_webhook_url: url }), "escalation_webhook_url")
        }
        // Raw: not a string.
        expectValidation(yield* patchSettingsRaw(base, owner, { escalation_webhook_url: 5 }), "escalation_webhook_url")
        expect((yield* getSettings(owner)).escalation_webhook_url).toBeNull()
        const ok = yield* updateSettings(owner, { escalation_webhook_url: "https://hooks.example.com:8443/a?b=c" })
        expect(ok.escalation_webhook_url).toBe("https://hooks.example.com:8443/a?b=c")
      })
    )

    it.effect("config.llm_budget is validated {cap_minor integer >= 0, currency usd, window day|month}", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const good = { cap_minor: 5000, currency: "usd", window: "month" } as const
        // Raw: budgets the schema refuses.
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
          expectValidation(yield* patchSettingsRaw(base, owner, { config: { llm_budget } }), path)
        }
        expectValidation(
          yield* patchSettingsRaw(base, owner, { config: { action_budget: { cap: -5 } } }),
          "config.action_budget.cap"
        )
        for (const config of ["x", 5, [], true, null]) {
          expectValidation(yield* patchSettingsRaw(base, owner, { config }), "config")
        }
        expect((yield* getSettings(owner)).config).toEqual({})

        const stored = yield* updateSettings(owner, { config: { llm_budget: good } })
        expect(stored.config).toEqual({ llm_budget: good })
        const day = { cap_minor: 0, currency: "usd", window: "day" } as const
        expect((yield* updateSettings(owner, { config: { llm_budget: day } })).config).toEqual({ llm_budget: day })
      })
    )

    it.effect("config is merged key by key; a null value removes the key", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const budget = { cap_minor: 100, currency: "usd", window: "day" } as const
        yield* updateSettings(owner, { config: { llm_budget: budget, team: { name: "a" } } })
        const merged = yield* updateSettings(owner, { config: { action_budget: { cap: 10 }, flags: ["x", 1, null] } })
        expect(merged.config).toEqual({
          llm_budget: budget,
          team: { name: "a" },
          action_budget: { cap: 10 },
          flags: ["x", 1, null]
        })
        // A key's value is replaced whole (top-level merge), null removes, others stay.
        const replaced = yield* updateSettings(owner, { config: { team: { size: 3 }, llm_budget: null, flags: null } })
        expect(replaced.config).toEqual({ team: { size: 3 }, action_budget: { cap: 10 } })
        // config: {} and other fields leave config as it is.
        expect((yield* updateSettings(owner, { config: {} })).config).toEqual(replaced.config)
        expect((yield* updateSettings(owner, { default_action: "defer" })).config).toEqual(replaced.config)
        expect((yield* getSettings(owner)).config).toEqual(replaced.config)
        // Removing a key that is not there is fine.
        expect((yield* updateSettings(owner, { config: { never_set: null } })).config).toEqual(replaced.config)
      })
    )

    // Valid JSON that PostgreSQL's jsonb cannot store: the client gets a 4xx, not a 500.
    // Raw: the bodies are written out by hand (lone surrogates, nesting past the contract's limits).
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
        expect((yield* getSettings(owner)).config).toEqual({})
      })
    )

    it.effect("malformed JSON 400, a non-object body 400, a wrong content type 415, no credential 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // Raw: malformed JSON, non-object bodies and a wrong media type.
        expectError(yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, raw: "{" }), 400, "malformed_json")
        for (const raw of ["[]", "null", '"x"', "7"]) {
          expectError(yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, raw }), 400, "validation_failed")
        }
        expectError(
          yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, raw: "{}", contentType: "text/plain" }),
          415,
          "unsupported_media_type"
        )
        const anonymous = yield* clientAt(base)
        yield* expectFailure(anonymous.settings.updateSettings({ payload: {} }), 401)
        yield* expectFailure(anonymous.settings.getSettings({}), 401)
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
          const settings = yield* updateSettings(owner, { escalation_webhook_url: url })
          expect(settings.escalation_webhook_url).not.toBeNull()
          expect(new URL(settings.escalation_webhook_url ?? "").protocol).toBe("http:")
        }
        for (const url of [
          "http://hooks.example.com/x",
          "http://127.0.0.2/x",
          "http://127.0.0.1.nip.io/x",
          "http://localhost.example.com/x",
          "http://127.0.0.1@evil.example.com/x",
          "http://[::1]/x"
        ]) {
          yield* expectInvalid(updateSettings(owner, { escalation_webhook_url: url }), "escalation_webhook_url")
        }
        // https anywhere, still.
        yield* updateSettings(owner, { escalation_webhook_url: "https://hooks.example.com/x" })
      })
    )
  }
)
