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
import { Duration, Effect, Option, Schedule } from "effect"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { PaymentRequired } from "../platform/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { BudgetRepo, type WindowKey, type WindowKind } from "./BudgetRepo.js"
import { minorToNanos } from "./Pricing.js"
import { makeTtlCache } from "./TtlCache.js"

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
  /** No call is admitted from the lease after this (ms since epoch); it is then returned. */
  readonly admitUntil: number
  lastUsed: number
}

/** One call to settle: its actual cost, and its reservation if it was strictly admitted. */
export interface Settlement {
  readonly workspaceId: string
  readonly reservation: Option.Option<Reservation>
  readonly actual: bigint
  readonly at: Date
}

const SWEEP_EVERY = Duration.seconds(30)
const SETTINGS_TTL = Duration.seconds(1)
/** A lease holds this many worst cases of the call that asked for it; taken only while that fits under the cap. */
const LEASE_CALLS = 20n
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
    // Settings are read through a 1 s cache, as by the authorization pipeline: a budget change applies within 1 s.
    const budgetCache = makeTtlCache<Option.Option<LlmBudget>>(SETTINGS_TTL)

    yield* Effect.forkScoped(
      repo.releaseExpired.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not release expired LLM budget reservations", cause)),
        Effect.repeat(Schedule.spaced(SWEEP_EVERY))
      )
    )

    const activeBudget = (workspaceId: string) =>
      budgetCache.get(
        workspaceId,
        Effect.map(settings.settingsOf(workspaceId), (current) => budgetOf(current.config))
      )

    const keyOf = (workspaceId: string, budget: LlmBudget, at: Date): WindowKey => ({
      workspaceId,
      kind: budget.window,
      start: windowStart(at, budget.window)
    })

    const ensureWindow = (key: WindowKey) => {
      const name = `${key.workspaceId}|${key.kind}|${key.start.getTime()}`
      return ensured.has(name) ? Effect.void : Effect.tap(repo.ensureWindow(key), () => Effect.sync(() => ensured.add(name)))
    }

    // Leases by window row: most strict calls are admitted from memory, without a round trip to the ledger row.
    const leases = new Map<string, Lease>()
    const leaseLock = yield* Effect.makeSemaphore(1)
    const windowName = (key: WindowKey) => `${key.workspaceId}|${key.kind}|${key.start.getTime()}`

    /** Gives back what a lease still holds (its calls in flight shrink it as they settle). */
    const returnLease = (name: string, lease: Lease) =>
      Effect.suspend(() => {
        if (leases.get(name) === lease) leases.delete(name)
        const rest = lease.remaining
        lease.remaining = 0n
        return rest === 0n ? Effect.void : repo.shrink(lease.id, rest)
      })

    const returnStale = Effect.suspend(() => {
      const now = Date.now()
      const stale = [...leases].filter(([, lease]) => now >= lease.admitUntil || now - lease.lastUsed >= LEASE_IDLE_MS)
      return Effect.forEach(stale, ([name, lease]) => returnLease(name, lease), { discard: true })
    })
    yield* Effect.forkScoped(
      returnStale.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not return an LLM budget lease", cause)),
        Effect.repeat(Schedule.spaced(LEASE_CHECK_EVERY))
      )
    )
    yield* Effect.addFinalizer(() =>
      Effect.forEach([...leases], ([name, lease]) => returnLease(name, lease), { discard: true }).pipe(Effect.ignore)
    )

    /** Takes `worstCase` from the window's lease, if it has that much and still admits. */
    const drawFromLease = (key: WindowKey, worstCase: bigint): Reservation | undefined => {
      const lease = leases.get(windowName(key))
      const now = Date.now()
      if (lease === undefined || now >= lease.admitUntil || lease.remaining < worstCase) return undefined
      lease.remaining -= worstCase
      lease.lastUsed = now
      return { id: lease.id, amount: worstCase, window: lease.window, windowStart: lease.windowStart, leased: true }
    }

    /** A new lease of LEASE_CALLS worst cases, if that much fits under the cap (the old one's remainder goes back). */
    const takeLease = (key: WindowKey, budget: LlmBudget, worstCase: bigint, holdFor: Duration.Duration) =>
      leaseLock.withPermits(1)(
        Effect.gen(function* () {
          const drawn = drawFromLease(key, worstCase) // another call may have just taken one
          if (drawn !== undefined) return Option.some(drawn)
          const now = Date.now()
          const id = prefixedId("lse")
          const granted = yield* repo.reserve(key, {
            id,
            amount: worstCase * LEASE_CALLS,
            cap: minorToNanos(budget.capMinor),
            expiresAt: new Date(now + LEASE_ADMITS_FOR_MS + Duration.toMillis(holdFor))
          })
          if (Option.isNone(granted)) return Option.none<Reservation>()
          const name = windowName(key)
          const previous = leases.get(name)
          if (previous !== undefined) yield* returnLease(name, previous)
          leases.set(name, {
            id,
            window: key.kind,
            windowStart: key.start,
            remaining: worstCase * LEASE_CALLS,
            admitUntil: now + LEASE_ADMITS_FOR_MS,
            lastUsed: now
          })
          return Option.fromNullable(drawFromLease(key, worstCase))
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
        const fromLease = drawFromLease(key, worstCase)
        if (fromLease !== undefined) return fromLease
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

    return { activeBudget, reserve, admitSoft, settle }
  }),
  dependencies: [BudgetRepo.Default]
}) {}
