/**
 * Warm steps: a use case on a hot path is written once, as a synchronous
 * function over what is in memory (caches, and what was loaded for it so
 * far), that answers one of three things:
 * - `Ready(value)`: everything it needed was there; `value` is what to act on;
 * - `Needs(what)`: something is not in memory (a cold cache, a row to read);
 * - `Refused(error)`: the request is refused.
 *
 * The direct path (no fiber, src/http/Lane.ts) calls the step once with
 * nothing loaded and declines the request unless it is ready. The
 * Effect path (`settle`) loads what the step needs and calls the same step
 * again, until it is ready or refused. So both paths decide by the same rules.
 *
 * A step may take something (a budget draw, a stream slot) only on its
 * `Ready` branch, as its last act: whoever receives `Ready` acts on it at
 * once (`settle` calls `act` in the same synchronous turn as the step).
 */
import { Deferred, Effect, Exit, type Fiber, FiberId, Scope } from "effect"

export interface Ready<A> {
  readonly _tag: "Ready"
  readonly value: A
}

export interface Needs<N> {
  readonly _tag: "Needs"
  readonly need: N
}

export interface Refused<E> {
  readonly _tag: "Refused"
  readonly error: E
}

export type Warm<A, E, N> = Ready<A> | Needs<N> | Refused<E>

export const ready = <A>(value: A): Ready<A> => ({ _tag: "Ready", value })
export const needs = <N>(need: N): Needs<N> => ({ _tag: "Needs", need })
export const refused = <E>(error: E): Refused<E> => ({ _tag: "Refused", error })

/** A step from what was loaded so far; `Needs` is answered by `load`, which extends what was loaded. */
export interface WarmSteps<L, A, E, N, E2, R> {
  readonly step: (loaded: L) => Warm<A, E, N>
  readonly load: (need: N, loaded: L) => Effect.Effect<L, E2, R>
  /** Gives back what loads took, when the steps end refused (or a later load fails). */
  readonly abandon?: ((loaded: L) => Effect.Effect<void>) | undefined
}

/**
 * The Effect path of warm steps: steps from `initial`, loading what each
 * step needs, until one is ready (then `act` runs on its value in the same
 * synchronous turn, and its result is answered) or refused.
 */
export const settle = <L, A, E, N, E2, R, B>(
  steps: WarmSteps<L, A, E, N, E2, R>,
  initial: L,
  act: (value: A) => B
): Effect.Effect<B, E | E2, R> => {
  // What the loads so far took, until `act` owns it: given back if the run is interrupted (a client gone)
  // in between. With something to give back, loads run uninterruptibly, so what one takes (a budget
  // reservation) is never lost mid-write; before, it stayed reserved until swept (about 21 minutes).
  const guarded = <X, Y, Z>(load: Effect.Effect<X, Y, Z>) =>
    steps.abandon === undefined ? load : Effect.uninterruptible(load)
  let held = initial
  let owned = false
  const from = (loaded: L): Effect.Effect<B, E | E2, R> =>
    Effect.suspend(() => {
      const result = steps.step(loaded)
      switch (result._tag) {
        case "Ready":
          owned = true
          return Effect.succeed(act(result.value))
        case "Refused":
          owned = true
          return giveBack(loaded, Effect.fail(result.error))
        case "Needs":
          return Effect.flatMap(
            giveBackOnFailure(
              loaded,
              // Recorded inside the guarded region: an interruption right after the load still sees it.
              guarded(
                Effect.tap(steps.load(result.need, loaded), (next) => {
                  held = next
                })
              )
            ),
            from
          )
      }
    })
  const giveBack = <X, Y, Z>(loaded: L, outcome: Effect.Effect<X, Y, Z>) =>
    steps.abandon === undefined || loaded === initial ? outcome : Effect.zipRight(steps.abandon(loaded), outcome)
  const giveBackOnFailure = <X, Y, Z>(loaded: L, load: Effect.Effect<X, Y, Z>) =>
    steps.abandon === undefined || loaded === initial
      ? load
      : Effect.tapErrorCause(load, () => {
          owned = true
          return steps.abandon!(loaded)
        })
  const abandon = steps.abandon
  return abandon === undefined
    ? from(initial)
    : Effect.onInterrupt(from(initial), () => (owned || held === initial ? Effect.void : abandon(held)))
}

/** `settle` that answers the ready value itself. */
export const settleValue = <L, A, E, N, E2, R>(steps: WarmSteps<L, A, E, N, E2, R>, initial: L) =>
  settle(steps, initial, (value: A) => value)

/** A use case over warm steps: `now` from memory alone, `settle` loading what it needs. */
export interface WarmUseCase<In, A, E> {
  readonly now: (input: In) => Warm<A, E, unknown>
  readonly settle: (input: In) => Effect.Effect<A, E>
}

export const warmUseCase = <In, L, A, E, N>(definition: {
  /** The span of the Effect path, `Domain.useCase`. */
  readonly name: string
  readonly initial: L
  readonly steps: (input: In) => WarmSteps<L, A, E, N, E, never>
}): WarmUseCase<In, A, E> => ({
  now: (input) => definition.steps(input).step(definition.initial),
  settle: (input) => settleValue(definition.steps(input), definition.initial).pipe(Effect.withSpan(definition.name))
})

/** How a use case answers its request: once, now or later. */
export type Answer<A, E> = (outcome: Exit.Exit<A, E>) => void

/** What a direct run did: declined (it did nothing), or took the request; `closed` runs when its response has closed. */
export type DirectRun = { readonly taken: false } | { readonly taken: true; readonly closed: () => void }

const declined: DirectRun = { taken: false }
const nothing = () => {}

/**
 * A hot path's use case: warm steps, and what to do once they are ready
 * (`act`, which answers through `answer`, now or later, and may answer work
 * to do once the response has closed). Both ways to run it are built here,
 * from the same steps and the same act.
 */
export interface HotUseCase<In, A, E> {
  /** From memory alone: declines, having done nothing, unless the steps are ready; else acts on them. */
  readonly direct: (input: In, answer: Answer<A, E>) => DirectRun
  /** Loads what the steps need; the `closed` work runs when the scope (the request's) closes. */
  readonly run: (input: In) => Effect.Effect<A, E, Scope.Scope>
}

export const hotUseCase = <In, L, R, N, A, E>(definition: {
  /** The span of the Effect path, `Domain.useCase` (the direct path runs no Effect, so it has none). */
  readonly name: string
  readonly initial: L
  readonly steps: (input: In) => WarmSteps<L, R, E, N, E, never>
  readonly act: (input: In, ready: R, answer: Answer<A, E>) => (() => void) | void
}): HotUseCase<In, A, E> => ({
  direct: (input, answer) => {
    // A refusal is left to the Effect path too, which answers it from the same step: the direct path only acts.
    const result = definition.steps(input).step(definition.initial)
    if (result._tag !== "Ready") return declined
    return { taken: true, closed: definition.act(input, result.value, answer) ?? nothing }
  },
  run: (input) =>
    Effect.gen(function* () {
      const outcome = yield* Deferred.make<A, E>()
      const answer: Answer<A, E> = (exit) => Deferred.unsafeDone(outcome, exit)
      // Acting and keeping its `closed` work happen together: no interruption can fall between them.
      yield* Effect.acquireRelease(
        settle(definition.steps(input), definition.initial, (ready) => definition.act(input, ready, answer) ?? nothing),
        (closed) => Effect.sync(closed)
      )
      return yield* Deferred.await(outcome)
    }).pipe(Effect.withSpan(definition.name))
})

/** A use case over another input: `toInput` reads what it needs from the input at hand. */
export const mapInput = <In, From, A, E>(
  useCase: HotUseCase<In, A, E>,
  toInput: (input: From) => In
): HotUseCase<From, A, E> => ({
  direct: (input, answer) => useCase.direct(toInput(input), answer),
  run: (input) => useCase.run(toInput(input))
})

/**
 * Runs a hot use case from callback code: its direct run when the steps are ready, else its Effect run on a
 * fiber of `runFork`'s runtime. Answers the `closed` work, to call once the outcome is no longer needed
 * (for a proxied call: once its response has closed); before the answer, it abandons the run.
 */
export const runNow = <In, A, E>(
  useCase: HotUseCase<In, A, E>,
  input: In,
  answer: Answer<A, E>,
  runFork: <X, Y>(effect: Effect.Effect<X, Y>) => Fiber.RuntimeFiber<X, Y>
): (() => void) => {
  const direct = useCase.direct(input, answer)
  if (direct.taken) return direct.closed
  // The run's scope stays open (its `closed` work pending) until interrupted by `closed`.
  const fiber = runFork(
    Effect.acquireUseRelease(
      Scope.make(),
      (scope) =>
        Effect.exit(Scope.extend(useCase.run(input), scope)).pipe(
          Effect.flatMap((outcome) => Effect.sync(() => answer(outcome))),
          Effect.zipRight(Effect.never)
        ),
      (scope, exit) => Scope.close(scope, exit)
    )
  )
  return () => fiber.unsafeInterruptAsFork(FiberId.none)
}

/**
 * `runNow` for a use case that leaves no work for when its response closes (a decision): its Effect run's
 * scope closes as soon as it has answered.
 */
export const answerNow = <In, A, E>(
  useCase: HotUseCase<In, A, E>,
  input: In,
  answer: Answer<A, E>,
  runFork: <X, Y>(effect: Effect.Effect<X, Y>) => Fiber.RuntimeFiber<X, Y>
): void => {
  if (useCase.direct(input, answer).taken) return
  runFork(Effect.scoped(useCase.run(input))).addObserver(answer)
}

/** A value that arrives once, from callback code; whoever asks before it arrives is called when it does. */
export interface Later<A> {
  readonly done: (value: A) => void
  readonly then: (use: (value: A) => void) => void
}

export const later = <A>(): Later<A> => {
  let arrived: { readonly value: A } | undefined
  let waiting: Array<(value: A) => void> = []
  return {
    done: (value) => {
      if (arrived !== undefined) return
      arrived = { value }
      const callbacks = waiting
      waiting = []
      for (const use of callbacks) use(value)
    },
    then: (use) => {
      if (arrived === undefined) waiting.push(use)
      else use(arrived.value)
    }
  }
}

/** Starts one callback run per item; answers their values in order once all have, or the first failure. */
export const allNow = <I, A, E>(
  items: ReadonlyArray<I>,
  start: (item: I, answer: Answer<A, E>) => void,
  answer: Answer<Array<A>, E>
): void => {
  const values = new Array<A>(items.length)
  let left = items.length
  let over = false
  if (left === 0) return answer(Exit.succeed(values))
  items.forEach((item, index) =>
    start(item, (exit) => {
      if (over) return
      if (Exit.isFailure(exit)) {
        over = true
        return answer(Exit.failCause(exit.cause))
      }
      values[index] = exit.value
      left -= 1
      if (left === 0) {
        over = true
        answer(Exit.succeed(values))
      }
    })
  )
}

/** A callback that hands a thrown defect to `onDefect` rather than into its caller (a stream's or a writer's loop). */
export const catching =
  <X>(onDefect: (defect: unknown) => void, run: (value: X) => void) =>
  (value: X): void => {
    try {
      run(value)
    } catch (defect) {
      onDefect(defect)
    }
  }
