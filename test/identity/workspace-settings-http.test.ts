/**
 * Workspace settings over HTTP against the real service and PostgreSQL:
 * defaults, partial PATCH, validation of every field, and config merged key
 * by key. A second server runs with HTTP_URL_ALLOWLIST=127.0.0.1,localhost
 * for the plain-http webhook rule. Environments and their checker modes are
 * in workspace-environments-http.test.ts and
 * workspace-checker-modes-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt, expectFailure, expectInvalid, type GuardrailClient, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { TIMESTAMP } from "../support/Formats.js"
import { getSettings, MODES, type Owner, tick } from "./workspace-config-support.js"

/** PATCH /v1/settings with a body the contract allows. */
const updateSettings = (
  owner: Owner,
  payload: Parameters<GuardrailClient["settings"]["updateSettings"]>[0]["payload"]
) => owner.api.settings.updateSettings({ payload })

/** PATCH /v1/settings raw, for bodies the schema refuses (the client would not send them). */
const patchSettingsRaw = (base: string, owner: { readonly jwt: string }, body: unknown) =>
  call(base, "PATCH", "/v1/settings", { token: owner.jwt, body })

layer(testServer("database"), SERVER_OPTIONS)("environments and settings over HTTP", (it) => {
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
          // An array is read as an object without fields (Effect's struct decoding): the first missing one is named.
          ["config.llm_budget.currency", [good]]
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
        // A number JSON.parse reads as Infinity would be stored as null: refused, naming where it is.
        const huge = yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, raw: '{"config":{"a":1e400}}' })
        expect(expectError(huge, 400, "validation_failed").details?.map((detail) => detail.path)).toEqual(["config.a"])
        // A key that decoding would turn into the object's prototype (dropped without a word): refused, named.
        const proto = yield* call(base, "PATCH", "/v1/settings", {
          token: owner.jwt,
          raw: '{"config":{"__proto__":{"default_action":"deny"}}}'
        })
        expect(expectError(proto, 400, "validation_failed").details?.map((detail) => detail.path)).toEqual([
          "config.__proto__"
        ])
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
