/** The review-queues contract (an extension): queues of traces picked by rules for human review. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Authentication } from "../identity/Authentication.js"
import { ReportQuery } from "../http/Routes.js"
import { CursorParam, LimitParam } from "../platform/Schemas.js"
import { CreateReviewQueue, ReviewQueue, ReviewQueueId, ReviewQueueItems, UpdateReviewQueue } from "./Domain.js"

const QueuePath = Schema.Struct({ id: ReviewQueueId })
const Page = Schema.Struct({ limit: Schema.optional(LimitParam()), cursor: Schema.optional(CursorParam) })

export class ReviewQueuesApi extends HttpApiGroup.make("reviewQueues")
  .add(
    HttpApiEndpoint.get("listReviewQueues", "/review-queues")
      .setUrlParams(Page)
      .addSuccess(
        Schema.Struct({ review_queues: Schema.Array(ReviewQueue), next_cursor: Schema.optional(Schema.String) })
      )
  )
  .add(
    HttpApiEndpoint.post("createReviewQueue", "/review-queues")
      .setPayload(CreateReviewQueue)
      .addSuccess(ReviewQueue, { status: 201 })
  )
  .add(HttpApiEndpoint.get("getReviewQueue", "/review-queues/:id").setPath(QueuePath).addSuccess(ReviewQueue))
  .add(
    HttpApiEndpoint.patch("updateReviewQueue", "/review-queues/:id")
      .setPath(QueuePath)
      .setPayload(UpdateReviewQueue)
      .addSuccess(ReviewQueue)
  )
  .add(
    HttpApiEndpoint.del("deleteReviewQueue", "/review-queues/:id")
      .setPath(QueuePath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    HttpApiEndpoint.get("listReviewQueueItems", "/review-queues/:id/items")
      .setPath(QueuePath)
      .setUrlParams(Page)
      .addSuccess(ReviewQueueItems)
      // Read through the rules over every trace of the workspace (progress counts them all): a report.
      .annotate(ReportQuery, true)
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Extension: review queues. A queue's rules pick traces (a rule's conditions all hold, sampled by a hash of the trace id at its sample_rate, else the queue's); items list traces not yet reviewed first, then reviewed, newest first within each (a page ends early, with next_cursor, after the trace whose payload brings it to 4 MiB of JSON), with progress counts over the whole queue."
  ) {}
