/**
 * Graceful shutdown of the HTTP side: the request pipeline counts requests
 * in flight; when the process stops, `drainOnShutdown`'s finalizer (which runs
 * before the API's services and the server are released) turns new requests
 * away with 503 `shutting_down` and `Connection: close`, and waits until every
 * request in flight has its answer (at most SHUTDOWN_DRAIN_SECONDS). Then
 * the rest of the shutdown proceeds: handlers detached, services closed,
 * consumers commit their positions, the server and the database close.
 */
import { Duration, Effect, Layer } from "effect"

export interface Traffic {
  inFlight: number
  draining: boolean
  readonly idle: Set<() => void>
}

export const makeTraffic = (): Traffic => ({ inFlight: 0, draining: false, idle: new Set() })

/** Counts a request in flight (the fast lane, which answers outside Effect, calls these itself). */
export const enterRequest = (traffic: Traffic) => {
  traffic.inFlight++
}

/** Counts a request's answer; the drain waits for the count to reach 0. */
export const leaveRequest = (traffic: Traffic) => {
  traffic.inFlight--
  if (traffic.inFlight === 0) for (const resolve of traffic.idle) resolve()
}

/** Runs `handle` counted as in flight. */
export const countedRequest = <A, E, R>(traffic: Traffic, handle: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => enterRequest(traffic)),
    () => handle,
    () => Effect.sync(() => leaveRequest(traffic))
  )

const untilIdle = (traffic: Traffic) =>
  Effect.async<void>((resume) => {
    if (traffic.inFlight === 0) return resume(Effect.void)
    const done = () => {
      traffic.idle.delete(done)
      resume(Effect.void)
    }
    traffic.idle.add(done)
    return Effect.sync(() => traffic.idle.delete(done))
  })

/** A layer whose release starts draining and waits for the requests in flight (bounded by `limit`). */
export const drainOnShutdown = (traffic: Traffic, limit: Duration.DurationInput) =>
  Layer.scopedDiscard(
    Effect.addFinalizer(() =>
      Effect.gen(function* () {
        traffic.draining = true
        const waiting = traffic.inFlight
        yield* Effect.logInfo("shutdown: draining requests in flight").pipe(Effect.annotateLogs({ in_flight: waiting }))
        // Finalizers run uninterruptibly: the wait must be made interruptible, or the time limit could not end it.
        const finished = yield* untilIdle(traffic).pipe(Effect.interruptible, Effect.timeout(limit), Effect.isSuccess)
        yield* finished
          ? Effect.logInfo("shutdown: requests drained")
          : Effect.logWarning("shutdown: drain time limit reached").pipe(
              Effect.annotateLogs({ in_flight: traffic.inFlight })
            )
      })
    )
  )
