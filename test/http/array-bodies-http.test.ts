/**
 * A JSON array where an endpoint takes an object is a 400, on every such
 * endpoint: Effect's struct decoding takes an array for an object (`[]` as
 * `{}`), so endpoints whose fields are all optional (red-team `harden`,
 * `plan`) answered 200 and acted on a body that was not one. The route table
 * names every endpoint whose body is an object; each gets `[]` and `[{}]`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { GuardrailApi } from "../../src/Api.js"
import { makeRouteTable } from "../../src/http/Routes.js"
import { call, expectError } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const objectRoutes = makeRouteTable(GuardrailApi).filter((route) => route.objectBody && route.body === "json")
const pathOf = (template: string) => template.replace(/:[A-Za-z_]+/g, "x")

layer(testServer("database"), SERVER_OPTIONS)("array bodies", (it) => {
  it.effect("every endpoint whose body is a JSON object answers an array 400 validation_failed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      // The red-team endpoints that took [] as {} are among them.
      const names = objectRoutes.map((route) => route.endpoint)
      expect(names).toEqual(expect.arrayContaining(["createPlan", "hardenJob", "updateSettings"]))
      for (const route of objectRoutes) {
        for (const raw of ["[]", "[{}]"]) {
          const answer = yield* call(base, route.method, pathOf(route.template), { token: owner.jwt, raw })
          const where = `${route.method} ${route.template} ${raw}: ${answer.text.slice(0, 200)}`
          expect(answer.status, where).toBe(400)
          const error = expectError(answer, 400, "validation_failed")
          // The fast lane's endpoints (decisions, run events) name what the body should have been instead.
          if (!route.template.startsWith("/v1/events") && !route.template.endsWith("/events")) {
            expect(error.message, where).toBe("body: must be a JSON object, not an array")
          }
        }
      }
    })
  )
})
