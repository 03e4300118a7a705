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
  /** Mailbox capacity; `tell` waits when it is full, `offerAvailable` answers what does not fit (default 4096). */
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
  /**
   * `tell` for several messages to one key, in order. Only this key's teller waits for room: a full mailbox
   * never holds up tellers of other keys. Tellers of one key that must keep their order must not overlap.
   */
  readonly tellAll: (key: string, messages: Iterable<M>) => Effect.Effect<void>
  /** Puts what fits in the key's mailbox now, in order, without waiting; answers the messages that did not fit. */
  readonly offerAvailable: (key: string, messages: ReadonlyArray<M>) => Effect.Effect<ReadonlyArray<M>>
  /** Keys with a running actor. */
  readonly keys: Effect.Effect<ReadonlyArray<string>>
}

interface Actor<M> {
  readonly mailbox: Queue.Queue<M>
  fiber: Fiber.RuntimeFiber<void> | undefined
  /** Tellers waiting for room in the mailbox: an actor with any is not idle, so it is not retired under them. */
  waiting: number
}

/** Actors for the life of the scope; closing it interrupts every actor. */
export const makeActors = <M, R>(options: ActorsOptions<M, R>): Effect.Effect<Actors<M>, never, Scope.Scope | R> =>
  Effect.gen(function* () {
    const maxBatch = options.maxBatch ?? 500
    const idleAfter = Duration.decode(options.idleAfter ?? "60 seconds")
    const linger = Duration.decode(options.linger ?? 0)
    const actors = new Map<string, Actor<M>>()
    // Starting, retiring an actor and counting its waiting tellers happen under this lock, so no message lands in
    // a retired mailbox. Nobody waits for room while holding it: one key's full mailbox would stop every key.
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
          if (actor.waiting > 0 || (yield* Queue.size(actor.mailbox)) > 0) return false
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

    // Under the lock only.
    const actorOf = (key: string) =>
      Effect.gen(function* () {
        const existing = actors.get(key)
        if (existing !== undefined) return existing
        const created: Actor<M> = {
          mailbox: yield* Queue.bounded<M>(options.mailboxSize ?? 4096),
          fiber: undefined,
          waiting: 0
        }
        created.fiber = yield* Effect.forkIn(Effect.provide(run(key, created), context), scope)
        actors.set(key, created)
        return created
      })

    const tellAll = (key: string, messages: Iterable<M>) =>
      Effect.acquireUseRelease(
        lock.withPermits(1)(
          Effect.map(actorOf(key), (actor) => {
            actor.waiting++
            return actor
          })
        ),
        (actor) => Queue.offerAll(actor.mailbox, messages),
        (actor) =>
          Effect.sync(() => {
            actor.waiting--
          })
      ).pipe(Effect.asVoid)

    const offerAvailable = (key: string, messages: ReadonlyArray<M>) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          if (messages.length === 0) return messages
          const actor = yield* actorOf(key)
          // `size` counts waiting tellers' messages too (and is negative while the actor waits for some).
          const room = Queue.capacity(actor.mailbox) - Math.max(0, yield* Queue.size(actor.mailbox))
          if (room <= 0) return messages
          yield* Queue.offerAll(actor.mailbox, messages.slice(0, room))
          return messages.slice(room)
        })
      )

    const tell = (key: string, message: M) => tellAll(key, [message])

    return { tell, tellAll, offerAvailable, keys: Effect.sync(() => [...actors.keys()]) }
  })
