/** Handlers of the review-queues group; changes are recorded in the audit log (migration 0026's trigger). */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { auditedWrites } from "../audit/Chain.js"
import { inWorkspace } from "../identity/Authentication.js"
import { pageSize } from "../platform/Schemas.js"
import { ReviewQueues } from "./ReviewQueues.js"

export const ReviewQueuesHttpLive = HttpApiBuilder.group(GuardrailApi, "reviewQueues", (handlers) =>
  Effect.gen(function* () {
    const queues = yield* ReviewQueues
    const audited = yield* auditedWrites
    return handlers
      .handle("listReviewQueues", ({ urlParams }) =>
        inWorkspace((ws) => queues.list(ws, pageSize(urlParams.limit, 100), urlParams.cursor))
      )
      .handle("createReviewQueue", ({ payload }) => audited(inWorkspace((ws) => queues.create(ws, payload))))
      .handle("getReviewQueue", ({ path }) => inWorkspace((ws) => queues.get(ws, path.id)))
      .handle("updateReviewQueue", ({ path, payload }) =>
        audited(inWorkspace((ws) => queues.update(ws, path.id, payload)))
      )
      .handle("deleteReviewQueue", ({ path }) => audited(inWorkspace((ws) => queues.remove(ws, path.id))))
      .handle("listReviewQueueItems", ({ path, urlParams }) =>
        inWorkspace((ws) => queues.items(ws, path.id, pageSize(urlParams.limit, 100), urlParams.cursor))
      )
  })
)
