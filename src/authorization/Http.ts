/** Handlers of the authorization groups: decisions, receipts, the receipt keys and approval grants. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer } from "effect"
import { GuardrailApi } from "../Api.js"
import { auditedWrites } from "../audit/Chain.js"
import { CompileAllowance } from "../catalog/CompileAllowance.js"
import { type HotEndpoint, routerHandler } from "../http/Hot.js"
import { CurrentCaller, inWorkspace } from "../identity/Authentication.js"
import { Idempotency } from "../idempotency/Idempotency.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { keepDecisionAnswer } from "../privacy/Payloads.js"
import { pageSize } from "../platform/Schemas.js"
import { Approvals } from "./Approvals.js"
import { mapInput } from "../platform/Warm.js"
import { Traces } from "../runs/Traces.js"
import { Authorization } from "./Authorization.js"
import { eventOf, overlayOf } from "./DryRun.js"
import { AuthorizationRepo } from "./Repo.js"
import { AuthorizationResponse, type ProposedEvent } from "./Domain.js"
import { ReceiptSigner } from "./Receipts.js"

/** `POST /v1/events`, called by agents before every action: the router and the fast lane run this declaration. */
export const authorizeEvent = Effect.gen(function* () {
  const authorization = yield* Authorization
  const idempotency = yield* Idempotency
  const hot: HotEndpoint<never, typeof ProposedEvent.Type, typeof AuthorizationResponse.Type> = {
    group: "events",
    endpoint: "authorizeEvent",
    raw: false,
    direct: true,
    useCase: mapInput(authorization.authorizeEvent, (request) => ({
      caller: request.caller,
      event: request.payload,
      startedAt: request.startedAt
    }))
  }
  const settings = yield* WorkspaceSettings
  // The caller gets its own content back; what a repeat answers is stored as the trace keeps it.
  return idempotency.hot(hot, AuthorizationResponse, (request, response) =>
    Effect.map(settings.runtimeConfig(request.caller.workspaceId), (config) =>
      keepDecisionAnswer(config.settings.data_handling_mode, response)
    )
  )
})

export const EventsHttpLive = HttpApiBuilder.group(GuardrailApi, "events", (handlers) =>
  Effect.gen(function* () {
    const hot = yield* authorizeEvent
    const authorization = yield* Authorization
    const allowance = yield* CompileAllowance
    return handlers.handle("authorizeEvent", routerHandler(hot)).handle("evaluateEvent", ({ payload }) =>
      Effect.flatMap(CurrentCaller, (caller) =>
        Effect.flatMap(
          // Candidates compile on this thread: within the workspace's compile allowance.
          (payload.candidate_policies ?? []).length === 0
            ? overlayOf(payload)
            : Effect.flatten(allowance.metered(caller.workspaceId, () => overlayOf(payload))),
          (overlay) => authorization.evaluateDry(caller, eventOf(payload), overlay)
        )
      )
    )
  })
)

export const ReceiptsHttpLive = HttpApiBuilder.group(GuardrailApi, "receipts", (handlers) =>
  Effect.gen(function* () {
    const authorization = yield* Authorization
    const approvals = yield* Approvals
    // Grants and denials are audited (migration 0030): the transaction names who gave them.
    const audited = yield* auditedWrites
    return handlers
      .handle("getReceipt", ({ path }) =>
        Effect.flatMap(CurrentCaller, (caller) => authorization.receipt(caller.workspaceId, path.id))
      )
      .handle("grantApproval", ({ path, payload }) =>
        audited(Effect.flatMap(CurrentCaller, (caller) => approvals.grant(caller, path.intent_id, payload)))
      )
      .handle("jwks", () => Effect.succeed(authorization.jwks))
  })
)

export const ApprovalsHttpLive = HttpApiBuilder.group(GuardrailApi, "approvals", (handlers) =>
  Effect.gen(function* () {
    const approvals = yield* Approvals
    const audited = yield* auditedWrites
    return handlers
      .handle("listApprovals", ({ urlParams }) =>
        inWorkspace((ws) =>
          approvals.list(ws, urlParams.status ?? "pending", pageSize(urlParams.limit, 100), urlParams.cursor)
        )
      )
      .handle("denyApproval", ({ path, payload }) =>
        audited(Effect.flatMap(CurrentCaller, (caller) => approvals.deny(caller, path.intent_id, payload)))
      )
  })
)

export const AuthorizationLive = Layer.merge(Authorization.Default, Approvals.Default).pipe(
  Layer.provideMerge(Layer.mergeAll(ReceiptSigner.Default, Traces.Default, AuthorizationRepo.Default))
)
