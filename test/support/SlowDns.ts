/**
 * A DNS server that never answers for one host, and how to see what waiting
 * on it holds: tests that a URL's check (a lookup of up to 3 s) runs before
 * its write's transaction opens.
 */
import { Effect } from "effect"
import type { HostResolver } from "../../src/platform/OutboundGuard.js"
import { queryDatabase } from "./Database.js"
import { loopbackOnlyResolver } from "./TestServer.js"

/** A resolver whose lookups of `host` never answer (their start times are in `lookups`); others are loopback's. */
export const slowDns = (host: string) => {
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
