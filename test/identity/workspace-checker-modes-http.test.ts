/**
 * An environment's checker-mode overrides over HTTP against the real service
 * and PostgreSQL: null inherits, PUT replaces, the server stamps updated_at,
 * and bad bodies or unknown environments are refused. Environments are in
 * workspace-environments-http.test.ts; workspace settings in
 * workspace-settings-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { EnvironmentId } from "../../src/identity/Domain.js"
import { expectFailure, type GuardrailClient, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createEnvironment, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { TIMESTAMP } from "../support/Formats.js"
import { getSettings, MODES, tick } from "./workspace-config-support.js"

layer(testServer("database"), SERVER_OPTIONS)("environments and settings over HTTP", (it) => {
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
})
