/** Volume seeded straight into the suite's database, for bounds no client could reach in a test's time. */
import { Effect } from "effect"
import { queryDatabase } from "./Database.js"
import { tenant } from "./Tenants.js"
import { baseUrl, TestDatabaseUrl } from "./TestServer.js"

/**
 * A fresh tenant of the suite's server (`testServerWithDatabase`) with rows seeded by `statement`: its $1 is
 * the tenant's workspace id, then come `params`.
 */
export const seededTenant = (statement: string, params: ReadonlyArray<unknown> = []) =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    const owner = yield* tenant(base)
    yield* queryDatabase(yield* TestDatabaseUrl, statement, [owner.workspaceId, ...params])
    return { base, owner }
  })
