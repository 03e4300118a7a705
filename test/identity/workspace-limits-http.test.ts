/**
 * A user owns at most MAX_WORKSPACES_PER_USER workspaces (set low here; the
 * one signup made counts): each workspace has caps and fair shares of its
 * own, so one user minting workspaces without end would multiply them. Past
 * the cap `POST /v1/team/my-workspaces` is 409 workspace_limit_reached,
 * concurrent creates cannot slip past it together, and other users are not
 * affected.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { expectFailure } from "../support/Api.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

layer(testServer("database", { MAX_WORKSPACES_PER_USER: "3" }), SERVER_OPTIONS)("workspace limits", (it) => {
  it.effect("a 4th workspace of 3 is 409 workspace_limit_reached, even when sent at once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const other = yield* tenant(base)
      const create = (api: typeof owner.api, name: string) => api.team.createWorkspace({ payload: { name } })
      const outcomes = yield* Effect.forEach(["a", "b", "c", "d"], (name) => Effect.either(create(owner.api, name)), {
        concurrency: "unbounded"
      })
      expect(outcomes.filter((outcome) => outcome._tag === "Right")).toHaveLength(2)
      const refused = yield* expectFailure(create(owner.api, "e"), 409, "workspace_limit_reached")
      expect(refused.message).toMatch(/MAX_WORKSPACES_PER_USER/)
      const mine = yield* owner.api.team.listMyWorkspaces({ headers: { "x-service-user-id": owner.user_id } })
      expect(mine.workspaces).toHaveLength(3)
      // Another user's count is their own.
      yield* create(other.api, "theirs")
    })
  )
})
