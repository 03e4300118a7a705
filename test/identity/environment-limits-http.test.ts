/**
 * A workspace stores at most MAX_ENVIRONMENTS_PER_WORKSPACE environments (set
 * low here; the default one counts): every hot-path read of its runtime
 * config holds all of them. Past the cap a create is 409
 * environment_limit_reached, concurrent creates cannot slip past it
 * together, a delete makes room, and other workspaces are not affected.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

layer(testServer("database", { MAX_ENVIRONMENTS_PER_WORKSPACE: "3" }), SERVER_OPTIONS)("environment limits", (it) => {
  it.effect("a 4th environment of 3 is 409 environment_limit_reached, even when sent at once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const other = yield* tenant(base)
      const create = (api: typeof owner.api, slug: string) =>
        api.environments.createEnvironment({ payload: { name: slug, slug } })
      const outcomes = yield* Effect.forEach(["a", "b", "c", "d"], (slug) => Effect.either(create(owner.api, slug)), {
        concurrency: "unbounded"
      })
      expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(2)
      const refused = yield* expectFailure(create(owner.api, "e"), 409, "environment_limit_reached")
      expect(refused.message).toMatch(/MAX_ENVIRONMENTS_PER_WORKSPACE/)
      const { environments } = yield* owner.api.environments.listEnvironments({})
      expect(environments).toHaveLength(3)
      // A taken slug is still named as such below the cap.
      yield* create(other.api, "a")
      yield* expectFailure(create(other.api, "a"), 409, "environment_slug_taken")
      // A delete makes room again.
      const added = environments.find((environment) => !environment.is_default)!
      yield* owner.api.environments.deleteEnvironment({ path: { id: added.id } })
      yield* create(owner.api, "after-a-delete")
    })
  )
})
