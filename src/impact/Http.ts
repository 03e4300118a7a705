/** Handlers of the impact replay group. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { CurrentCaller, inWorkspace } from "../identity/Authentication.js"
import { Impact } from "./Impact.js"

export const PolicyImpactHttpLive = HttpApiBuilder.group(GuardrailApi, "policyImpact", (handlers) =>
  Effect.gen(function* () {
    const impact = yield* Impact
    return handlers
      .handle("startPolicyImpact", ({ payload }) =>
        Effect.flatMap(CurrentCaller, (caller) => impact.start(caller, payload))
      )
      .handle("getPolicyImpact", ({ path }) => inWorkspace((ws) => impact.get(ws, path.id)))
  })
).pipe(Layer.provide(Impact.Default))
