/** Handlers of the audit-events group. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { inWorkspace } from "../identity/Authentication.js"
import { pageSize } from "../platform/Schemas.js"
import { AuditLog } from "./AuditLog.js"

export const AuditEventsHttpLive = HttpApiBuilder.group(GuardrailApi, "auditEvents", (handlers) =>
  Effect.gen(function* () {
    const audit = yield* AuditLog
    return handlers
      .handle("listAuditEvents", ({ urlParams }) =>
        inWorkspace((ws) => audit.list(ws, urlParams, pageSize(urlParams.limit, 200)))
      )
      .handle("verifyAuditEvents", () => inWorkspace((ws) => audit.verify(ws)))
  })
)
