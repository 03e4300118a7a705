/** Liveness and readiness probes. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"

export const Health = Schema.Struct({
  status: Schema.Literal("ok"),
  checks: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
}).annotations({ identifier: "Health" })

export class SystemApi extends HttpApiGroup.make("system")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health))
  .add(HttpApiEndpoint.get("readyz", "/readyz").addSuccess(Health))
  .annotate(
    OpenApi.Description,
    "Probes: /healthz answers while the process is up; /readyz while the database and event log answer."
  ) {}
