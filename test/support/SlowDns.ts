/**
 * A DNS server that never answers, for save-time URL checks (up to 3 s each): and how to see whether a request
 * waiting on it holds a database connection in an open transaction meanwhile.
 */
import { Effect } from "effect"
import type { HostResolver } from "../../src/platform/OutboundGuard.js"
import { queryDatabase } from "./Database.js"
import { loopbackOnlyResolver } from "./TestServer.js"

/** A resolver whose lookups of `host` never answer (`lookups` counts them); other names as on loopback only. */
export const hangingDns = (host: string) => {
  const lookups: Array<number> = []
  const resolver: HostResolver = {
    resolve: (name) => {
      if (name !== host) return loopbackOnlyResolver.resolve(name)
      lookups.push(Date.now())
      return new Promise(() => {})
    }
  }
  return { lookups, resolver }
}

/** Sessions of the database idle inside an audited write's transaction that began by `at`. */
export const heldTransactions = (db: string, at: Date) =>
  Effect.map(
    queryDatabase<{ held: number }>(
      db,
      `select count(*)::int as held from pg_stat_activity
        where datname = current_database() and state like 'idle in transaction%'
          and query like '%guardrail.audit_actor%' and xact_start <= $1`,
      [at]
    ),
    (rows) => rows[0]!.held
  )
