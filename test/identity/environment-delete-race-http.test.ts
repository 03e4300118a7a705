/**
 * Deleting an environment while a key is created in it: the delete refuses
 * an environment with active keys (409 environment_in_use), and that must
 * hold against a key created at the same moment. Either the key is created
 * (and the delete refused) or the environment is gone (and the create is a
 * 404); never a 500, and never a 201 for a key the delete then removed.
 * The race is made certain by holding the environment's row locked until
 * both requests wait on it.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type { EnvironmentId } from "../../src/identity/Domain.js"
import { lockedRows, serviceWaitsOnLocks } from "../support/Database.js"
import { eventually } from "../support/Eventually.js"
import { call } from "../support/Raw.js"
import { createEnvironment, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("environment delete racing a key create", (it) => {
  it.effect("a key created while its environment is deleted is either kept (delete 409) or refused (404)", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      const environment = yield* createEnvironment(owner)

      const [created, deleted] = yield* Effect.scoped(
        Effect.gen(function* () {
          yield* lockedRows(url, "select 1 from environments where id = $1 for update", [environment.id])
          const create = yield* Effect.fork(
            call(base, "POST", "/v1/api-keys", {
              token: owner.jwt,
              body: { name: "racing", environment_id: environment.id }
            })
          )
          const remove = yield* Effect.fork(
            call(base, "DELETE", `/v1/environments/${environment.id}`, { token: owner.jwt })
          )
          yield* eventually(Effect.filterOrFail(serviceWaitsOnLocks(url), (waiting) => waiting >= 2))
          return [create, remove] as const
        })
      ).pipe(Effect.flatMap(([create, remove]) => Effect.all([Fiber.join(create), Fiber.join(remove)])))

      const { environments } = yield* owner.api.environments.listEnvironments({})
      const { api_keys } = yield* owner.api.apiKeys.listApiKeys({})
      if (created.status === 201) {
        // The key answered as created exists, in an environment that exists: the delete was refused.
        expect(deleted.status).toBe(409)
        expect(api_keys.map((key) => key.name)).toContain("racing")
        expect(environments.map((env) => env.id)).toContain(environment.id as EnvironmentId)
      } else {
        expect(created.status).toBe(404)
        expect(deleted.status).toBe(204)
        expect(api_keys.map((key) => key.name)).not.toContain("racing")
      }
    })
  )
})
