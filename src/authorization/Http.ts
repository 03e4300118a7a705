/** Handlers of the authorization groups: decisions, receipts, the receipt keys and approval grants. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { CurrentCaller } from "../identity/Authentication.js"
import { Traces } from "../runs/Traces.js"
import { Authorization } from "./Authorization.js"
import { ReceiptSigner } from "./Receipts.js"

export const EventsHttpLive = HttpApiBuilder.group(GuardrailApi, "events", (handlers) =>
  Effect.gen(function* () {
    const authorization = yield* Authorization
    return handlers.handle("authorizeEvent", ({ payload }) =>
      Effect.flatMap(CurrentCaller, (caller) => authorization.authorize(caller, payload))
    )
  })
)

export const ReceiptsHttpLive = HttpApiBuilder.group(GuardrailApi, "receipts", (handlers) =>
  Effect.gen(function* () {
    const authorization = yield* Authorization
    return handlers
      .handle("getReceipt", ({ path }) =>
        Effect.flatMap(CurrentCaller, (caller) => authorization.receipt(caller.workspaceId, path.id))
      )
      .handle("grantApproval", ({ path, payload }) =>
        Effect.flatMap(CurrentCaller, (caller) => authorization.grant(caller, path.intent_id, payload))
      )
      .handle("jwks", () => Effect.succeed(authorization.jwks))
  })
)

export const AuthorizationLive = Authorization.Default.pipe(
  Layer.provideMerge(Layer.mergeAll(ReceiptSigner.Default, Traces.Default))
)
