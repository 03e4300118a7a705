/**
 * Debts of main-thread time, per key (a workspace): what a key's requests spent is added, and paid
 * back at a fixed rate. While a debt is past its burst, the key waits.
 * The compile allowance (src/catalog/CompileAllowance.ts) and the decision allowance
 * (src/authorization/DecisionAllowance.ts) are two uses, each with a meter per workspace and one for
 * all workspaces together (`makeSharedAllowance`).
 */

/** Keys tracked at most; past it, those whose debt is paid are forgotten first. */
const MAX_TRACKED = 10_000

/** A debt of milliseconds, last updated `at` (epoch ms). */
export interface WorkMeter {
  debt: number
  at: number
}

/** The meter's debt at `now`, after payback at `millisPerSecond`. */
export const debtAt = (meter: WorkMeter, millisPerSecond: number, now: number) =>
  Math.max(0, meter.debt - ((now - meter.at) / 1000) * millisPerSecond)

/** Seconds until the meter's debt is back within `burstMillis`, or 0 when it is. */
export const waitFor = (meter: WorkMeter, millisPerSecond: number, burstMillis: number, now: number) => {
  const over = debtAt(meter, millisPerSecond, now) - burstMillis
  return over <= 0 ? 0 : Math.ceil(over / millisPerSecond)
}

export const charge = (meter: WorkMeter, millisPerSecond: number, millis: number, now: number) => {
  meter.debt = debtAt(meter, millisPerSecond, now) + millis
  meter.at = now
}

/** One meter per key, paid back at `millisPerSecond`, waiting past `burstMillis`; a key never charged takes no entry. */
export const makeWorkMeters = (millisPerSecond: number, burstMillis: number) => {
  const meters = new Map<string, WorkMeter>()
  return {
    /** Seconds `key` must wait, or 0 (a key never charged reads no clock: the decisions' hot path). */
    waitFor: (key: string) => {
      const meter = meters.get(key)
      return meter === undefined ? 0 : waitFor(meter, millisPerSecond, burstMillis, Date.now())
    },
    /** Whether `key` was last charged at or after `since` (epoch ms); a key never charged reads no clock. */
    chargedSince: (key: string, since: () => number) => {
      const meter = meters.get(key)
      return meter !== undefined && meter.at >= since()
    },
    charge: (key: string, millis: number, now: number) => {
      let meter = meters.get(key)
      if (meter === undefined) {
        if (meters.size >= MAX_TRACKED) {
          for (const [other, entry] of meters) if (debtAt(entry, millisPerSecond, now) === 0) meters.delete(other)
        }
        meter = { debt: 0, at: now }
        meters.set(key, meter)
      }
      charge(meter, millisPerSecond, millis, now)
    }
  }
}

/** Which allowance a key waits for, and how many seconds. */
export interface AllowanceWait {
  readonly scope: "key" | "service"
  readonly seconds: number
}

/**
 * A meter per key and one for all keys together. A key waits while its own debt is past `keyBurst`, or
 * while the service's is past `serviceBurst` and the key was charged within `recentMillis`: the keys that
 * ran the service's debt up wait, and one without recent charges goes on (before, past the service's
 * allowance every key waited, however little it had spent).
 */
export const makeSharedAllowance = (options: {
  readonly perKey: number
  readonly keyBurst: number
  readonly perService: number
  readonly serviceBurst: number
  readonly recentMillis: number
}) => {
  const keys = makeWorkMeters(options.perKey, options.keyBurst)
  const service: WorkMeter = { debt: 0, at: 0 }
  return {
    /** Undefined when `key` may go on (a key never charged reads no clock: the decisions' hot path). */
    waitFor: (key: string): AllowanceWait | undefined => {
      const own = keys.waitFor(key)
      if (own > 0) return { scope: "key", seconds: own }
      if (!keys.chargedSince(key, () => Date.now() - options.recentMillis)) return undefined
      const shared = waitFor(service, options.perService, options.serviceBurst, Date.now())
      return shared > 0 ? { scope: "service", seconds: shared } : undefined
    },
    charge: (key: string, millis: number, now: number) => {
      keys.charge(key, millis, now)
      charge(service, options.perService, millis, now)
    }
  }
}
