/**
 * Budget leases: most strict LLM budget admissions are drawn from a share of
 * the window's budget that this process reserved in the ledger ahead of
 * time (a lease), so they need no round trip to the ledger row. A lease
 * holds about a second of calls' worst cases; when it runs low the next one
 * is taken in the background, and what a lease still holds goes back when
 * it expires, sits idle, or the process stops. Near the cap, where no lease
 * fits any more, calls reserve exactly their own worst case (Budgets.ts).
 */
import { Duration, Effect, Option, Runtime } from "effect"
import { every } from "../platform/Background.js"
import { AppConfig } from "../platform/Config.js"
import { prefixedId } from "../platform/Ids.js"
import { BudgetRepo, type WindowKey, type WindowKind } from "./BudgetRepo.js"
import type { LlmBudget, Reservation } from "./Budgets.js"
import { minorToNanos } from "./Pricing.js"

/** A process's share of a window's budget, reserved in PostgreSQL like a call and handed out locally. */
interface Lease {
  readonly id: string
  readonly window: WindowKind
  readonly windowStart: Date
  /** Reserved and not yet handed to a call. */
  remaining: bigint
  /** What was reserved. */
  readonly granted: bigint
  /**
   * The cap (USD nanos) it was reserved under: once the budget's cap is lowered below it, no call is drawn
   * from it (it was sized to a budget that is no more) and it goes back.
   */
  readonly cap: bigint
  readonly takenAt: number
  /** Calls admitted from it so far (for sizing the next lease to the call rate). */
  draws: number
  /** No call is admitted from the lease after this (ms since epoch); it is then returned. */
  readonly admitUntil: number
  lastUsed: number
}

/** A window's leases in this process: the one calls draw from, and the one taken ahead to follow it. */
interface WindowLeases {
  current: Lease | undefined
  next: Lease | undefined
  refilling: boolean
  /**
   * Taking a lease of this window is one at a time (a call waiting finds the lease just taken), per window:
   * one workspace's reservation waiting on its ledger row never holds up another workspace's.
   */
  readonly lock: Effect.Semaphore
  /** Fibers holding or waiting for `lock`: the entry is kept while any does, so they all share one lock. */
  lockers: number
}

/**
 * A lease holds worst cases of the call that asked for it: about a second of
 * the calls the previous lease admitted, at least LEASE_MIN_CALLS and at most
 * LEASE_MAX_CALLS, and only while that fits under the cap.
 */
const LEASE_MIN_CALLS = 20
const LEASE_MAX_CALLS = 1_000
/** When the current lease is down to this fraction, the next one is taken in the background. */
const LEASE_REFILL_BELOW = 4n
/** How long a lease admits calls, and how long it may sit unused before its remainder is given back. */
const LEASE_ADMITS_FOR_MS = 10_000
const LEASE_CHECK_EVERY = Duration.millis(250)

export class BudgetLeases extends Effect.Service<BudgetLeases>()("billing/BudgetLeases", {
  scoped: Effect.gen(function* () {
    const repo = yield* BudgetRepo
    // A lease no call has drawn from for this long goes back (BUDGET_LEASE_IDLE_MS).
    const leaseIdleMillis = (yield* AppConfig).budgetLeaseIdleMillis
    // Leases by window row.
    const leases = new Map<string, WindowLeases>()
    const scope = yield* Effect.scope
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const windowName = (key: WindowKey) => `${key.workspaceId}|${key.kind}|${key.start.getTime()}`
    const leasesOf = (name: string) => {
      let entry = leases.get(name)
      if (entry === undefined) {
        entry = {
          current: undefined,
          next: undefined,
          refilling: false,
          lock: Effect.unsafeMakeSemaphore(1),
          lockers: 0
        }
        leases.set(name, entry)
      }
      return entry
    }

    /** Gives back what a lease still holds (its calls in flight shrink it as they settle). */
    const returnLease = (lease: Lease) =>
      Effect.suspend(() => {
        const rest = lease.remaining
        lease.remaining = 0n
        return rest === 0n ? Effect.void : repo.shrink(lease.id, rest)
      })

    const returnStale = Effect.suspend(() => {
      const now = Date.now()
      const stale: Array<Lease> = []
      for (const [name, entry] of leases) {
        for (const slot of ["current", "next"] as const) {
          const lease = entry[slot]
          if (lease !== undefined && (now >= lease.admitUntil || now - lease.lastUsed >= leaseIdleMillis)) {
            entry[slot] = undefined
            stale.push(lease)
          }
        }
        if (entry.current === undefined && entry.next === undefined && !entry.refilling && entry.lockers === 0) {
          leases.delete(name)
        }
      }
      return Effect.forEach(stale, returnLease, { discard: true })
    })
    yield* Effect.forkScoped(every("LLM budget lease return", LEASE_CHECK_EVERY, returnStale))
    yield* Effect.addFinalizer(() =>
      Effect.forEach(
        [...leases.values()].flatMap((entry) => [entry.current, entry.next].filter((lease) => lease !== undefined)),
        returnLease,
        { discard: true }
      ).pipe(Effect.ignore)
    )

    /** Calls to lease for: about a second of what the current lease admitted. */
    const leaseCalls = (previous: Lease | undefined, now: number) => {
      if (previous === undefined) return LEASE_MIN_CALLS
      const perSecond = (previous.draws * 1000) / Math.max(now - previous.takenAt, 1)
      return Math.min(LEASE_MAX_CALLS, Math.max(LEASE_MIN_CALLS, Math.ceil(perSecond)))
    }

    /** Reserves a lease of `calls` worst cases if that fits under the cap, else of LEASE_MIN_CALLS if that does. */
    const reserveLease = (
      key: WindowKey,
      budget: LlmBudget,
      worstCase: bigint,
      calls: number,
      holdFor: Duration.Duration
    ): Effect.Effect<Option.Option<Lease>> =>
      Effect.flatMap(reserveLeaseOf(key, budget, worstCase, calls, holdFor), (lease) =>
        Option.isNone(lease) && calls > LEASE_MIN_CALLS
          ? reserveLeaseOf(key, budget, worstCase, LEASE_MIN_CALLS, holdFor)
          : Effect.succeed(lease)
      )

    const reserveLeaseOf = (
      key: WindowKey,
      budget: LlmBudget,
      worstCase: bigint,
      calls: number,
      holdFor: Duration.Duration
    ) =>
      Effect.gen(function* () {
        const now = Date.now()
        const id = prefixedId("lse")
        const amount = worstCase * BigInt(calls)
        const granted = yield* repo.reserve(key, {
          id,
          amount,
          cap: minorToNanos(budget.capMinor),
          expiresAt: new Date(now + LEASE_ADMITS_FOR_MS + Duration.toMillis(holdFor))
        })
        return Option.map(granted, (): Lease => ({
          id,
          window: key.kind,
          windowStart: key.start,
          remaining: amount,
          granted: amount,
          cap: minorToNanos(budget.capMinor),
          takenAt: now,
          draws: 0,
          admitUntil: now + LEASE_ADMITS_FOR_MS,
          lastUsed: now
        }))
      })

    /** Runs `effect` holding the window's lease lock. */
    const locked =
      (entry: WindowLeases) =>
      <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(
          Effect.sync(() => (entry.lockers += 1)),
          () => entry.lock.withPermits(1)(effect),
          () => Effect.sync(() => (entry.lockers -= 1))
        )

    /** Takes the next lease in the background (at most one at a time per window); calls keep drawing meanwhile. */
    const refillAhead = (key: WindowKey, budget: LlmBudget, worstCase: bigint, holdFor: Duration.Duration) => {
      const entry = leasesOf(windowName(key))
      if (entry.refilling || entry.next !== undefined) return Effect.void
      entry.refilling = true
      // The lease is put in place before the lock is let go: a call waiting on the lock must find it,
      // or it would be refused while this lease holds the budget it needed.
      return reserveLease(key, budget, worstCase, leaseCalls(entry.current, Date.now()), holdFor).pipe(
        Effect.tap((next) =>
          Effect.sync(() => {
            if (Option.isSome(next)) entry.next = next.value
          })
        ),
        locked(entry),
        Effect.catchAllCause((cause) => Effect.logWarning("could not take an LLM budget lease ahead", cause)),
        Effect.ensuring(Effect.sync(() => (entry.refilling = false))),
        Effect.forkIn(scope),
        Effect.asVoid
      )
    }

    /**
     * Takes `worstCase` from the window's current lease, moving on to the
     * next one when the current is used up (its remainder goes back); answers
     * the reservation, and a lease to give back, if any.
     */
    const drawFromLease = (key: WindowKey, budget: LlmBudget, worstCase: bigint) => {
      const entry = leases.get(windowName(key))
      if (entry === undefined) return undefined
      const now = Date.now()
      const cap = minorToNanos(budget.capMinor)
      let spent: Lease | undefined
      const usable = (lease: Lease | undefined) =>
        lease !== undefined && now < lease.admitUntil && lease.remaining >= worstCase && lease.cap <= cap
      if (!usable(entry.current) && usable(entry.next)) {
        spent = entry.current
        entry.current = entry.next
        entry.next = undefined
      }
      const lease = entry.current
      if (lease === undefined || !usable(lease)) return undefined
      lease.remaining -= worstCase
      lease.draws += 1
      lease.lastUsed = now
      const reservation: Reservation = {
        id: lease.id,
        amount: worstCase,
        window: lease.window,
        windowStart: lease.windowStart,
        leased: true
      }
      // Low only while nothing follows the lease yet: once the next is taken (or being taken), no draw forks for it.
      const low = lease.remaining * LEASE_REFILL_BELOW < lease.granted && !entry.refilling && entry.next === undefined
      return { reservation, spent, low }
    }

    /** Gives back the window's leases reserved under a higher cap than the budget's: what they hold no longer fits. */
    const returnAboveCap = (key: WindowKey, budget: LlmBudget) =>
      Effect.suspend(() => {
        const entry = leases.get(windowName(key))
        if (entry === undefined) return Effect.void
        const cap = minorToNanos(budget.capMinor)
        const above: Array<Lease> = []
        for (const slot of ["current", "next"] as const) {
          const lease = entry[slot]
          if (lease !== undefined && lease.cap > cap) {
            entry[slot] = undefined
            above.push(lease)
          }
        }
        return Effect.forEach(above, returnLease, { discard: true })
      })

    /** A lease for a call that found none to draw from, if one fits under the cap (the used-up one goes back). */
    const takeLease = (key: WindowKey, budget: LlmBudget, worstCase: bigint, holdFor: Duration.Duration) =>
      locked(leasesOf(windowName(key)))(
        Effect.gen(function* () {
          const drawn = drawFromLease(key, budget, worstCase) // another call may have just taken one
          if (drawn !== undefined) {
            if (drawn.spent !== undefined) yield* returnLease(drawn.spent)
            return Option.some(drawn.reservation)
          }
          yield* returnAboveCap(key, budget)
          const calls = leaseCalls(leases.get(windowName(key))?.current, Date.now())
          const taken = yield* reserveLease(key, budget, worstCase, calls, holdFor)
          if (Option.isNone(taken)) return Option.none<Reservation>()
          // Looked up after the round trip: the sweep drops a window's entry while it holds no lease.
          const entry = leasesOf(windowName(key))
          const previous = entry.current
          entry.current = taken.value
          if (previous !== undefined) yield* returnLease(previous)
          return Option.fromNullable(drawFromLease(key, budget, worstCase)?.reservation)
        })
      )

    /**
     * A reservation of `worstCase` drawn from this process's lease of the
     * window, without waiting; undefined when no lease covers it. What
     * follows a draw (giving back a used-up lease, taking the next one ahead)
     * runs in the background.
     */
    const draw = (key: WindowKey, budget: LlmBudget, worstCase: bigint, holdFor: Duration.Duration) => {
      const drawn = drawFromLease(key, budget, worstCase)
      if (drawn === undefined) return undefined
      if (drawn.spent !== undefined || drawn.low) {
        const spent = drawn.spent
        runFork(
          Effect.zipRight(
            spent === undefined ? Effect.void : returnLease(spent),
            drawn.low ? refillAhead(key, budget, worstCase, holdFor) : Effect.void
          ).pipe(Effect.catchAllCause((cause) => Effect.logWarning("could not give back an LLM budget lease", cause)))
        )
      }
      return drawn.reservation
    }

    return { draw, take: takeLease }
  }),
  dependencies: [BudgetRepo.Default]
}) {}
