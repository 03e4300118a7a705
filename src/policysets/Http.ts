/** Handlers of the policy-sets group. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { inWorkspace } from "../identity/Authentication.js"
import { PolicySets } from "./PolicySets.js"

export const PolicySetsHttpLive = HttpApiBuilder.group(GuardrailApi, "policySets", (handlers) =>
  Effect.gen(function* () {
    const sets = yield* PolicySets
    return handlers.handle("getPolicySet", ({ path }) => inWorkspace((ws) => sets.get(ws, path.digest)))
  })
).pipe(Layer.provide(PolicySets.Default))
