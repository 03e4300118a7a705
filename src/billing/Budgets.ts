/**
 * LLM budget admission (`config.llm_budget` in workspace settings:
 * {cap_minor, currency: usd, window: day | month}, active while cap_minor > 0).
 *
 * - strict (the request bounds its output): admitted only if
 *   spend + reserved + worst case <= cap; the worst case stays reserved in
 *   PostgreSQL until the call settles at its actual cost (or is released on
 *   failure), so no interleaving of requests, in any number of processes,
 *   spends past the cap;
 * - soft (no bound): admitted while spend + reserved < cap.
 * Refusal is 402 `budget_exceeded`, naming when the window resets.
 */
import { Duration, Effect, Option, Runtime, Schedule } from "effect"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { PaymentRequired } from "../http/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { BudgetRepo, type WindowKey, type WindowKind } from "./BudgetRepo.js"
import { minorToNanos } from "./Pricing.js"

export interface LlmBudget {
  readonly capMinor: number
  readonly window: WindowKind
}

export interface Reservation {
  /** The reservation's row: the call's own, or the lease it was drawn from. */
  readonly id: string
  readonly amount: bigint
  readonly window: WindowKind
  readonly windowStart: Date
  /** Drawn from this process's lease (settling shrinks the lease instead of dropping a row). */
  readonly leased: boolean
}

/** A process's share of a window's budget, reserved in PostgreSQL like a call and handed out locally. */
interface Lease {
  readonly id: string
  readonly window: WindowKind
  readonly windowStart: Date
  /** Reserved and not yet handed to a call. */
  remaining: bigint
  /** What was reserved. */
  readonly granted: bigint
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
}

/** One call to settle: its actual cost, and its reservation if it was strictly admitted. */
export interface Settlement {
  readonly workspaceId: string
  readonly reservation: Option.Option<Reservation>
  readonly actual: bigint
  readonly at: Date
}

const SWEEP_EVERY = Duration.seconds(30)
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
const LEASE_IDLE_MS = 1_000
const LEASE_CHECK_EVERY = Duration.millis(250)

export const windowStart = (at: Date, kind: WindowKind) =>
  kind === "day"
    ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()))
    : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1))

export const windowReset = (at: Date, kind: WindowKind) =>
  kind === "day"
    ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1))
    : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1))

/** The active budget in a settings `config` object, if any. */
export const budgetOf = (config: Readonly<Record<string, unknown>>): Option.Option<LlmBudget> => {
  const raw = config["llm_budget"]
  if (typeof raw !== "object" || raw === null) return Option.none()
  const { cap_minor, window } = raw as { cap_minor?: unknown; window?: unknown }
  if (typeof cap_minor !== "number" || !Number.isFinite(cap_minor) || cap_minor <= 0) return Option.none()
  return Option.some({ capMinor: Math.floor(cap_minor), window: window === "day" ? "day" : "month" })
}

const refusal = (budget: LlmBudget, at: Date, detail: string) => {
  const resetAt = windowReset(at, budget.window).toISOString()
  return new PaymentRequired({
    code: "budget_exceeded",
    message: `${detail} The workspace's LLM budget (${budget.capMinor} usd cents per ${budget.window}) resets at ${resetAt}.`,
    details: [{ path: "reset_at", message: resetAt }]
  })
}

export class Budgets extends Effect.Service<Budgets>()("billing/Budgets", {
  scoped: Effect.gen(function* () {
    const repo = yield* BudgetRepo
    const settings = yield* WorkspaceSettings
    /** Window rows known to exist: the ledger never deletes them, so each is ensured once per process. */
    const ensured = new Set<string>()

    yield* Effect.forkScoped(
      repo.releaseExpired.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not release expired LLM budget reservations", cause)),
        Effect.repeat(Schedule.spaced(SWEEP_EVERY))
      )
    )

    // The workspace's runtime settings are cached until they change (in any instance): no read per call.
    const activeBudget = (workspaceId: string) =>
      Effect.map(settings.runtimeConfig(workspaceId), (current) => budgetOf(current.settings.config))

    const keyOf = (workspaceId: string, budget: LlmBudget, at: Date): WindowKey => ({
      workspaceId,
      kind: budget.window,
      start: windowStart(at, budget.window)
    })

    const ensureWindow = (key: WindowKey) => {
      const name = `${key.workspaceId}|${key.kind}|${key.start.getTime()}`
      return ensured.has(name)
        ? Effect.void
        : Effect.tap(repo.ensureWindow(key), () => Effect.sync(() => ensured.add(name)))
    }

    // Leases by window row: most strict calls are admitted from memory, without a round trip to the ledger row.
    const leases = new Map<string, WindowLeases>()
    const leaseLock = yield* Effect.makeSemaphore(1)
    const scope = yield* Effect.scope
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const windowName = (key: WindowKey) => `${key.workspaceId}|${key.kind}|${key.start.getTime()}`
    const leasesOf = (name: string) => {
      let entry = leases.get(name)
      if (entry === undefined) {
        entry = { current: undefined, next: undefined, refilling: false }
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
          if (lease !== undefined && (now >= lease.admitUntil || now - lease.lastUsed >= LEASE_IDLE_MS)) {
            entry[slot] = undefined
            stale.push(lease)
          }
        }
        if (entry.current === undefined && entry.next === undefined && !entry.refilling) leases.delete(name)
      }
      return Effect.forEach(stale, returnLease, { discard: true })
    })
    yield* Effect.forkScoped(
      returnStale.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not return an LLM budget lease", cause)),
        Effect.repeat(Schedule.spaced(LEASE_CHECK_EVERY))
      )
    )
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
          takenAt: now,
          draws: 0,
          admitUntil: now + LEASE_ADMITS_FOR_MS,
          lastUsed: now
        }))
      })

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
        leaseLock.withPermits(1),
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
    const drawFromLease = (key: WindowKey, worstCase: bigint) => {
      const entry = leases.get(windowName(key))
      if (entry === undefined) return undefined
      const now = Date.now()
      let spent: Lease | undefined
      const usable = (lease: Lease | undefined) =>
        lease !== undefined && now < lease.admitUntil && lease.remaining >= worstCase
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
      return { reservation, spent, low: lease.remaining * LEASE_REFILL_BELOW < lease.granted }
    }

    /** A lease for a call that found none to draw from, if one fits under the cap (the used-up one goes back). */
    const takeLease = (key: WindowKey, budget: LlmBudget, worstCase: bigint, holdFor: Duration.Duration) =>
      leaseLock.withPermits(1)(
        Effect.gen(function* () {
          const drawn = drawFromLease(key, worstCase) // another call may have just taken one
          if (drawn !== undefined) {
            if (drawn.spent !== undefined) yield* returnLease(drawn.spent)
            return Option.some(drawn.reservation)
          }
          const calls = leaseCalls(leases.get(windowName(key))?.current, Date.now())
          const taken = yield* reserveLease(key, budget, worstCase, calls, holdFor)
          if (Option.isNone(taken)) return Option.none<Reservation>()
          // Looked up after the round trip: the sweep drops a window's entry while it holds no lease.
          const entry = leasesOf(windowName(key))
          const previous = entry.current
          entry.current = taken.value
          if (previous !== undefined) yield* returnLease(previous)
          return Option.fromNullable(drawFromLease(key, worstCase)?.reservation)
        })
      )

    /**
     * Strict admission: reserves `worstCase` (USD nanos) until `settle`, or
     * refuses. Far from the cap the reservation is drawn from a lease this
     * process holds (one ledger round trip per LEASE_CALLS calls); near it,
     * where a lease no longer fits, each call reserves exactly its own worst
     * case, so no process can hold back budget another could still spend.
     */
    const reserve = (workspaceId: string, budget: LlmBudget, worstCase: bigint, holdFor: Duration.Duration) =>
      Effect.gen(function* () {
        const at = new Date()
        const key = keyOf(workspaceId, budget, at)
        const drawn = drawFromLease(key, worstCase)
        if (drawn !== undefined) {
          if (drawn.spent !== undefined) yield* returnLease(drawn.spent)
          if (drawn.low) yield* refillAhead(key, budget, worstCase, holdFor)
          return drawn.reservation
        }
        yield* ensureWindow(key)
        const leased = yield* takeLease(key, budget, worstCase, holdFor)
        if (Option.isSome(leased)) return leased.value
        const id = prefixedId("rsv")
        const reserved = yield* repo.reserve(key, {
          id,
          amount: worstCase,
          cap: minorToNanos(budget.capMinor),
          expiresAt: new Date(at.getTime() + Duration.toMillis(holdFor))
        })
        if (Option.isNone(reserved)) {
          return yield* refusal(
            budget,
            at,
            "This request's worst-case cost (from max_tokens) does not fit in what is left of the LLM budget."
          )
        }
        return { id, amount: worstCase, window: key.kind, windowStart: key.start, leased: false } satisfies Reservation
      })

    /** Soft admission: admitted while spend + reserved is below the cap. */
    const admitSoft = (workspaceId: string, budget: LlmBudget) =>
      Effect.gen(function* () {
        const at = new Date()
        const committed = yield* repo.committed(keyOf(workspaceId, budget, at))
        if (committed >= minorToNanos(budget.capMinor)) {
          return yield* refusal(budget, at, "The LLM budget is spent.")
        }
      })

    /**
     * Records calls' actual costs and releases their reservations, in one
     * statement (plus one per reservation from an earlier window, when a call
     * spanned midnight). Run it in the transaction that records the calls'
     * usage events, so both commit together.
     */
    const settle = (settlements: ReadonlyArray<Settlement>) =>
      Effect.gen(function* () {
        const rows = new Map<string, { workspaceId: string; kind: WindowKind; start: Date; spent: bigint }>()
        const current: Array<string> = []
        const earlier: Array<string> = []
        const drawn = new Map<string, bigint>()
        for (const item of settlements) {
          for (const kind of ["day", "month"] as const) {
            const start = windowStart(item.at, kind)
            const key = `${item.workspaceId}|${kind}|${start.toISOString()}`
            const row = rows.get(key) ?? { workspaceId: item.workspaceId, kind, start, spent: 0n }
            rows.set(key, { ...row, spent: row.spent + item.actual })
          }
          if (Option.isSome(item.reservation)) {
            const reservation = item.reservation.value
            if (reservation.leased) {
              drawn.set(reservation.id, (drawn.get(reservation.id) ?? 0n) + reservation.amount)
              continue
            }
            const same = reservation.windowStart.getTime() === windowStart(item.at, reservation.window).getTime()
            ;(same ? current : earlier).push(reservation.id)
          }
        }
        const sorted = [...rows.entries()]
          .filter(([, row]) => row.spent > 0n || current.length > 0)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([, row]) => row)
        if (sorted.length > 0) yield* repo.settle(sorted, current)
        // After `settle`, which locked the same ledger rows in sorted order: no lock-order cycle between processes.
        for (const [leaseId, amount] of drawn) yield* repo.shrink(leaseId, amount)
        for (const id of earlier) yield* repo.release(id)
      })

    /** `activeBudget` from the settings cache alone (undefined when not cached). */
    const peekBudget = (workspaceId: string) => {
      const current = settings.peekRuntimeConfig(workspaceId)
      return current === undefined ? undefined : budgetOf(current.settings.config)
    }

    /**
     * `reserve` without waiting: a reservation drawn from this process's
     * lease, or undefined when that would need the ledger (then call
     * `reserve`). What follows a draw (giving back a used-up lease, taking
     * the next one ahead) runs in the background.
     */
    const reserveFromLease = (
      workspaceId: string,
      budget: LlmBudget,
      worstCase: bigint,
      holdFor: Duration.Duration
    ) => {
      const key = keyOf(workspaceId, budget, new Date())
      const drawn = drawFromLease(key, worstCase)
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

    return { activeBudget, peekBudget, reserve, reserveFromLease, admitSoft, settle }
  }),
  dependencies: [BudgetRepo.Default]
}) {}
