/**
 * Review queues: named rules that pick traces for human review (all denies
 * of an agent, 5 % of permits, every finding of one policy...). A queue
 * stores only its rules; its items are read from the traces each time, so a
 * rule change applies to past traffic too, and sampling is deterministic (a
 * hash of the trace id, Repo.ts) so the same trace stays in or out. A trace
 * leaves the pending part of a queue when any review is posted on it.
 */
import { Effect, Option } from "effect"
import { NotFound } from "../http/Errors.js"
import { decodeCursor, encodeCursor, pageAfterCut, isCursorTime, pageByTime } from "../platform/Cursor.js"
import { prefixedId } from "../platform/Ids.js"
import { MAX_PAGE_BYTES } from "../platform/PageBytes.js"
import { toTimestamp } from "../platform/Schemas.js"
import { toTrace } from "../runs/Traces.js"
import { type CreateReviewQueue, ReviewQueue, ReviewQueueId, type UpdateReviewQueue } from "./Domain.js"
import { type ItemPosition, type ItemRow, type QueueRow, ReviewQueueRepo } from "./Repo.js"

const toQueue = (row: QueueRow) =>
  new ReviewQueue({
    id: ReviewQueueId.make(row.id),
    name: row.name,
    rules: row.rules,
    sample_rate: row.sample_rate,
    created_at: toTimestamp(row.created_at),
    updated_at: toTimestamp(row.updated_at)
  })

const notFound = (id: string) =>
  new NotFound({ code: "review_queue_not_found", message: `No review queue ${id} in this workspace.` })

/** An item cursor: `[reviewed, created_at, id]`. */
const decodeItemCursor = (cursor: string): Option.Option<ItemPosition> =>
  decodeCursor(cursor, 3).pipe(
    Option.filter(([reviewed, at]) => (reviewed === "0" || reviewed === "1") && isCursorTime(at!)),
    Option.map(([reviewed, at, id]) => ({ reviewed: reviewed === "1", at: at!, id: id! }))
  )

const encodeItemCursor = (row: ItemRow) =>
  encodeCursor([row.reviewed ? "1" : "0", row.created_at.toISOString(), row.id])

export class ReviewQueues extends Effect.Service<ReviewQueues>()("reviewqueues/ReviewQueues", {
  effect: Effect.gen(function* () {
    const repo = yield* ReviewQueueRepo

    const load = (workspaceId: string, id: string) =>
      Effect.flatMap(
        repo.find(workspaceId, id),
        Option.match({ onNone: () => Effect.fail(notFound(id)), onSome: Effect.succeed })
      )

    const list = Effect.fn("ReviewQueues.list")(function* (
      workspaceId: string,
      limit: number,
      cursor: string | undefined
    ) {
      const { next, page } = yield* pageByTime(cursor, limit, (before) => repo.list(workspaceId, limit, before))
      return { review_queues: page.map(toQueue), ...next }
    })

    const create = Effect.fn("ReviewQueues.create")(function* (workspaceId: string, input: CreateReviewQueue) {
      const row = yield* repo.insert({
        id: prefixedId("rq"),
        workspaceId,
        name: input.name,
        rules: input.rules,
        sampleRate: input.sample_rate ?? 1
      })
      return toQueue(row)
    })

    const update = Effect.fn("ReviewQueues.update")(function* (
      workspaceId: string,
      id: string,
      input: UpdateReviewQueue
    ) {
      const row = yield* repo.update({
        id,
        workspaceId,
        name: input.name ?? null,
        rules: input.rules ?? null,
        sampleRate: input.sample_rate ?? null
      })
      if (Option.isNone(row)) return yield* notFound(id)
      return toQueue(row.value)
    })

    const remove = Effect.fn("ReviewQueues.remove")(function* (workspaceId: string, id: string) {
      if (!(yield* repo.remove(workspaceId, id))) return yield* notFound(id)
    })

    const items = Effect.fn("ReviewQueues.items")(function* (
      workspaceId: string,
      id: string,
      limit: number,
      cursor: string | undefined
    ) {
      const queue = yield* load(workspaceId, id)
      const { next, page } = yield* pageAfterCut(cursor, decodeItemCursor, encodeItemCursor, (after) =>
        repo.items(workspaceId, queue, limit, after, MAX_PAGE_BYTES)
      )
      const progress = yield* repo.progress(workspaceId, queue)
      return {
        progress: { ...progress, pending: progress.total - progress.reviewed },
        items: page.map(toTrace),
        ...next
      }
    })

    return {
      list,
      create,
      update,
      remove,
      items,
      get: (workspaceId: string, id: string) => Effect.map(load(workspaceId, id), toQueue)
    }
  }),
  dependencies: [ReviewQueueRepo.Default]
}) {}
