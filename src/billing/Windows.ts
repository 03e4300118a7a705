/** UTC budget windows: a day starts at 00:00Z, a month at 00:00Z on its first day. */
export type BudgetWindowName = "day" | "month"

export const windowStart = (window: BudgetWindowName, at: Date): Date =>
  window === "day"
    ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()))
    : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1))

export const windowEnd = (window: BudgetWindowName, at: Date): Date =>
  window === "day"
    ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1))
    : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1))

export const allWindows: ReadonlyArray<BudgetWindowName> = ["day", "month"]
