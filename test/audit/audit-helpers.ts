/** Reads shared by the audit suites. */
import { Effect } from "effect"
import type { Tenant } from "../support/Tenants.js"

/** Every audit event of the owner's workspace, newest first, paging through. */
export const allEvents = (owner: Tenant, filters: { readonly resource_type?: string } = {}) =>
  Effect.gen(function* () {
    const events = []
    let cursor: string | undefined
    do {
      const page = yield* owner.api.auditEvents.listAuditEvents({
        urlParams: { ...filters, limit: 200, ...(cursor === undefined ? {} : { cursor }) }
      })
      events.push(...page.audit_events)
      cursor = page.next_cursor
    } while (cursor !== undefined)
    return events
  })
