/**
 * Environments over HTTP against the real service and PostgreSQL: the
 * default environment, create, slugs, duplicates (409, concurrent creates
 * too), patch, delete. Their checker-mode overrides are in
 * workspace-checker-modes-http.test.ts; workspace settings in
 * workspace-settings-http.test.ts.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { EnvironmentId } from "../../src/identity/Domain.js"
import { clientAt, expectFailure, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createEnvironment, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { answerOf, describeAnswer } from "./http-helpers.js"
import { TIMESTAMP } from "../support/Formats.js"
import { type Owner, tick } from "./workspace-config-support.js"

const listEnvironments = (owner: Owner) =>
  Effect.map(owner.api.environments.listEnvironments({}), (body) => body.environments)

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
})
