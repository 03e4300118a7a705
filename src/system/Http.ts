import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { ServiceUnavailable } from "../http/Errors.js"
import { EventLog } from "../platform/EventLog.js"

/**
 * A check of `/readyz` (unauthenticated): a failure names what is out of reach and logs why; the driver's error
 * (addresses, ports, internals) stays in the log.
 */
const probe = <E, R>(name: string, check: Effect.Effect<unknown, E, R>) =>
  check.pipe(
    Effect.timeout(Duration.seconds(3)),
    Effect.tapError((cause) => Effect.logWarning(`readiness: the ${name} is not reachable`, cause)),
    Effect.mapError(
      () =>
        new ServiceUnavailable({
          code: "not_ready",
          message: `The ${name} is not reachable; retry shortly.`,
          details: [{ path: name, message: "not reachable" }]
        })
    )
  )

export const SystemHttpLive = HttpApiBuilder.group(GuardrailApi, "system", (handlers) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const log = yield* EventLog
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("readyz", () =>
        Effect.all([probe("database", sql`select 1`), probe("event log", log.ping)], { concurrency: 2 }).pipe(
          Effect.as({ status: "ok" as const, checks: { database: "ok", event_log: log.kind } })
        )
      )
  })
)
