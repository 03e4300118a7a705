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
import { Duration, Effect, Option } from "effect"
import { MAX_BUDGET_MINOR } from "../identity/Domain.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { PaymentRequired } from "../http/Errors.js"
import { every } from "../platform/Background.js"
import { prefixedId } from "../platform/Ids.js"
import { BudgetRepo, type WindowKey, type WindowKind } from "./BudgetRepo.js"
import { BudgetLeases } from "./BudgetLeases.js"
import { minorToNanos } from "./Pricing.js"
import { windowEnd, windowStart } from "./Windows.js"

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

/** One call to settle: its actual cost, and its reservation if it was strictly admitted. */
export interface Settlement {
  readonly workspaceId: string
  readonly reservation: Option.Option<Reservation>
  readonly actual: bigint
  readonly at: Date
}

const SWEEP_EVERY = Duration.seconds(30)

const WORST_CASE_REFUSAL =
  "This request's worst-case cost (from max_tokens) does not fit in what is left of the LLM budget."

/** The active budget in a settings `config` object, if any. */
export const budgetOf = (config: Readonly<Record<string, unknown>>): Option.Option<LlmBudget> => {
  const raw = config["llm_budget"]
  if (typeof raw !== "object" || raw === null) return Option.none()
  const { cap_minor, window } = raw as { cap_minor?: unknown; window?: unknown }
  if (typeof cap_minor !== "number" || !Number.isFinite(cap_minor) || cap_minor <= 0) return Option.none()
  // Clamped: a cap stored before caps were bounded acts as the largest one.
  const capMinor = Math.min(Math.floor(cap_minor), MAX_BUDGET_MINOR)
  return Option.some({ capMinor, window: window === "day" ? "day" : "month" })
}

const refusal = (budget: LlmBudget, at: Date, detail: string) => {
  const resetAt = windowEnd(budget.window, at).toISOString()
  return new PaymentRequired({
    code: "budget_exceeded",
    message: `${detail} The workspace's LLM budget (${budget.capMinor} usd cents per ${budget.window}) resets at ${resetAt}.`,
    details: [{ path: "reset_at", message: resetAt }]
  })
}

export class Budgets extends Effect.Service<Budgets>()("billing/Budgets", {
  scoped: Effect.gen(function* () {
    const repo = yield* BudgetRepo
    const leases = yield* BudgetLeases
    const settings = yield* WorkspaceSettings
    /** Window rows known to exist: the ledger never deletes them, so each is ensured once per process. */
    const ensured = new Set<string>()

    yield* Effect.forkScoped(every("LLM budget reservation release", SWEEP_EVERY, repo.releaseExpired))

    // The workspace's runtime settings are cached until they change (in any instance): no read per call.
    const activeBudget = (workspaceId: string) =>
      Effect.map(settings.runtimeConfig(workspaceId), (current) => budgetOf(current.settings.config))

    const keyOf = (workspaceId: string, budget: LlmBudget, at: Date): WindowKey => ({
      workspaceId,
      kind: budget.window,
      start: windowStart(budget.window, at)
    })

    const ensureWindow = (key: WindowKey) => {
      const name = `${key.workspaceId}|${key.kind}|${key.start.getTime()}`
      return ensured.has(name)
        ? Effect.void
        : Effect.tap(repo.ensureWindow(key), () =>
            Effect.sync(() => {
              // A new window every day for every workspace: bounded, as forgetting only costs one idempotent insert.
              if (ensured.size >= 10_000) ensured.clear()
              ensured.add(name)
            })
          )
    }

    /**
     * Strict admission: reserves `worstCase` (USD nanos) until `settle`, or
     * refuses. Far from the cap the reservation is drawn from a lease this
     * process holds (one ledger round trip per LEASE_CALLS calls); near it,
     * where a lease no longer fits, each call reserves exactly its own worst
     * case, so no process can hold back budget another could still spend.
     */
    const reserve = Effect.fn("Budgets.reserve")(function* (
      workspaceId: string,
      budget: LlmBudget,
      worstCase: bigint,
      holdFor: Duration.Duration
    ) {
      const at = new Date()
      // A worst case beyond the whole cap never fits (and may not even be a 64-bit amount for the ledger).
      if (worstCase > minorToNanos(budget.capMinor)) return yield* refusal(budget, at, WORST_CASE_REFUSAL)
      const key = keyOf(workspaceId, budget, at)
      const drawn = leases.draw(key, budget, worstCase, holdFor)
      if (drawn !== undefined) return drawn
      yield* ensureWindow(key)
      const leased = yield* leases.take(key, budget, worstCase, holdFor)
      if (Option.isSome(leased)) return leased.value
      const id = prefixedId("rsv")
      const reserved = yield* repo.reserve(key, {
        id,
        amount: worstCase,
        cap: minorToNanos(budget.capMinor),
        expiresAt: new Date(at.getTime() + Duration.toMillis(holdFor))
      })
      if (Option.isNone(reserved)) {
        return yield* refusal(budget, at, WORST_CASE_REFUSAL)
      }
      return { id, amount: worstCase, window: key.kind, windowStart: key.start, leased: false } satisfies Reservation
    })

    /** Soft admission: admitted while spend + reserved is below the cap. */
    const admitSoft = Effect.fn("Budgets.admitSoft")(function* (workspaceId: string, budget: LlmBudget) {
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
    const settle = Effect.fn("Budgets.settle")(function* (settlements: ReadonlyArray<Settlement>) {
      const rows = new Map<string, { workspaceId: string; kind: WindowKind; start: Date; spent: bigint }>()
      const current: Array<string> = []
      const earlier: Array<string> = []
      const drawn = new Map<string, bigint>()
      for (const item of settlements) {
        for (const kind of ["day", "month"] as const) {
          const start = windowStart(kind, item.at)
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
          const same = reservation.windowStart.getTime() === windowStart(reservation.window, item.at).getTime()
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

    /** `reserve` without waiting: a reservation drawn from this process's lease, or undefined (then call `reserve`). */
    const reserveFromLease = (workspaceId: string, budget: LlmBudget, worstCase: bigint, holdFor: Duration.Duration) =>
      leases.draw(keyOf(workspaceId, budget, new Date()), budget, worstCase, holdFor)

    return { activeBudget, peekBudget, reserve, reserveFromLease, admitSoft, settle }
  }),
  dependencies: [BudgetRepo.Default, BudgetLeases.Default]
}) {}
