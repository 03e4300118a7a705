/**
 * Keyed actors: one fiber with a bounded mailbox per key, created on the
 * first message and stopped after it has been idle a while. Messages to a
 * key are received in the order they were told, one batch at a time, and the
 * key's state belongs to that fiber alone, so it needs no locks. Stream
 * consumers use one actor per topic partition (Consumer.ts).
 */
import { Duration, Effect, Fiber, Option, Queue, type Scope } from "effect"

export interface ActorsOptions<M, R> {
  /** Handles the next messages of one key, in order; an actor never fails (handle errors inside). */
  readonly receive: (key: string, messages: ReadonlyArray<M>) => Effect.Effect<void, never, R>
  /** Most messages handed to `receive` at once (default 500). */
  readonly maxBatch?: number
  /** Mailbox capacity; `tell` waits when it is full (default 4096). */
  readonly mailboxSize?: number
  /** An actor with nothing to do for this long stops (default 60 s). */
  readonly idleAfter?: Duration.DurationInput
  /**
   * After a batch's first messages, wait this long for more before receiving
   * (default 0). A batch's cost is mostly fixed (a transaction), so at a
   * steady trickle a short linger turns many tiny batches into a few.
   */
  readonly linger?: Duration.DurationInput
}

export interface Actors<M> {
  /** Puts a message in the key's mailbox (starting its actor if needed); waits while the mailbox is full. */
  readonly tell: (key: string, message: M) => Effect.Effect<void>
  /** `tell` for several messages to one key, in order, under one acquisition of the lock. */
  readonly tellAll: (key: string, messages: Iterable<M>) => Effect.Effect<void>
  /** Keys with a running actor. */
  readonly keys: Effect.Effect<ReadonlyArray<string>>
}

interface Actor<M> {
  readonly mailbox: Queue.Queue<M>
  fiber: Fiber.RuntimeFiber<void> | undefined
}

/** Actors for the life of the scope; closing it interrupts every actor. */
export const makeActors = <M, R>(options: ActorsOptions<M, R>): Effect.Effect<Actors<M>, never, Scope.Scope | R> =>
  Effect.gen(function* () {
    const maxBatch = options.maxBatch ?? 500
    const idleAfter = Duration.decode(options.idleAfter ?? "60 seconds")
    const linger = Duration.decode(options.linger ?? 0)
    const actors = new Map<string, Actor<M>>()
    // Starting, telling and retiring an actor happen under this lock, so no message lands in a retired mailbox.
    const lock = yield* Effect.makeSemaphore(1)
    const scope = yield* Effect.scope
    const context = yield* Effect.context<R>()
    yield* Effect.addFinalizer(() =>
      Effect.forEach(actors.values(), (actor) => (actor.fiber ? Fiber.interrupt(actor.fiber) : Effect.void), {
        discard: true
      })
    )

    const retireIfIdle = (key: string, actor: Actor<M>) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          if ((yield* Queue.size(actor.mailbox)) > 0) return false
          actors.delete(key)
          yield* Queue.shutdown(actor.mailbox)
          return true
        })
      )

    const run = (key: string, actor: Actor<M>) =>
      Effect.gen(function* () {
        while (true) {
          const next = yield* Queue.takeBetween(actor.mailbox, 1, maxBatch).pipe(
            Effect.timeout(idleAfter),
            Effect.option
          )
          if (Option.isSome(next)) {
            const batch = [...next.value]
            if (batch.length < maxBatch && Duration.toMillis(linger) > 0) {
              yield* Effect.sleep(linger)
              batch.push(...(yield* Queue.takeUpTo(actor.mailbox, maxBatch - batch.length)))
            }
            yield* options.receive(key, batch)
          } else if (yield* retireIfIdle(key, actor)) {
            return
          }
        }
      })

    const tellAll = (key: string, messages: Iterable<M>) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          let actor = actors.get(key)
          if (actor === undefined) {
            const created: Actor<M> = {
              mailbox: yield* Queue.bounded<M>(options.mailboxSize ?? 4096),
              fiber: undefined
            }
            created.fiber = yield* Effect.forkIn(Effect.provide(run(key, created), context), scope)
            actors.set(key, created)
            actor = created
          }
          yield* Queue.offerAll(actor.mailbox, messages)
        })
      )

    const tell = (key: string, message: M) => tellAll(key, [message])

    return { tell, tellAll, keys: Effect.sync(() => [...actors.keys()]) }
  })
