/**
 * The approvals queue: intents deferred awaiting approval, granted (with a
 * lease) or denied by a person. A denied intent stays denied: deciding reads
 * the denial (Authorization.ts) and answers `deny`, and a later grant is 409.
 *
 * When the approval names `approvers`, only they may grant or deny (403 for
 * anyone else). Each entry is `user:<user id or username>`,
 * `role:<owner|admin|member>` (that role or a higher one), or a bare
 * username. No approvers (or an intent never seen): any member may.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { Conflict, Forbidden, NotFound } from "../http/Errors.js"
import type { Caller, WorkspaceRole } from "../identity/Authentication.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { pageByTime } from "../platform/Cursor.js"
import { toTimestamp } from "../platform/Schemas.js"
import { transactionOf } from "../platform/Sql.js"
import { keepOptionalString } from "../privacy/Redaction.js"
import { type ApprovalRow, type ApprovalStatus, ApprovalsRepo } from "./ApprovalsRepo.js"
import { AuthorizationRepo } from "./Repo.js"

const RANK: Readonly<Record<WorkspaceRole, number>> = { member: 0, admin: 1, owner: 2 }

/** Whether a person with this id, username and role is one of `approvers` (entries that are not strings never match). */
export const isApprover = (
  approvers: ReadonlyArray<string>,
  person: { readonly userId: string; readonly username: string | null; readonly role: WorkspaceRole }
) =>
  approvers.some((entry) => {
    if (entry.startsWith("role:")) {
      const role = entry.slice("role:".length) as WorkspaceRole
      return role in RANK && RANK[person.role] >= RANK[role]
    }
    const name = entry.startsWith("user:") ? entry.slice("user:".length) : entry
    return name === person.userId || (person.username !== null && name.toLowerCase() === person.username.toLowerCase())
  })

const stringsOf = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : []

const valueAt = (approval: unknown, key: string): unknown =>
  typeof approval === "object" && approval !== null ? (approval as Record<string, unknown>)[key] : null

const field = (approval: unknown, key: string): string | null => {
  const value = valueAt(approval, key)
  return typeof value === "string" ? value : null
}

const statusOf = (row: ApprovalRow): ApprovalStatus =>
  row.denied_by !== null ? "denied" : row.granted_by !== null ? "granted" : "pending"

const intentNotFound = (intentId: string) =>
  new NotFound({
    code: "intent_not_found",
    message: `No decision in this workspace asked for approval of intent ${intentId}.`
  })

const toApproval = (row: ApprovalRow) => ({
  intent_id: row.intent_id,
  status: statusOf(row),
  trace_id: row.trace_id,
  agent_id: row.agent_id,
  environment_id: row.environment_id,
  tool: field(row.approval, "tool"),
  reason: field(row.approval, "reason"),
  approvers: stringsOf(valueAt(row.approval, "approvers")),
  requested_at: toTimestamp(row.requested_at),
  granted_by: row.granted_by,
  expires_at: row.expires_at === null ? null : toTimestamp(row.expires_at),
  denied_by: row.denied_by,
  deny_reason: row.deny_reason
})

export class Approvals extends Effect.Service<Approvals>()("authorization/Approvals", {
  effect: Effect.gen(function* () {
    const repo = yield* ApprovalsRepo
    const grants = yield* AuthorizationRepo
    const transaction = transactionOf(yield* SqlClient.SqlClient)
    const settings = yield* WorkspaceSettings
    /** A grant's note or a denial's reason may quote the content: kept as the data_handling_mode allows. */
    const kept = (workspaceId: string, text: string | undefined) =>
      Effect.map(settings.dataHandlingMode(workspaceId), (mode) => keepOptionalString(mode, text))

    /** 403 unless the caller is one of the intent's approvers (when it names any); answers whether it ever asked. */
    const checkApprover = Effect.fn("Approvals.checkApprover")(function* (caller: Caller, intentId: string) {
      const requested = yield* repo.findRequest(caller.workspaceId, intentId)
      const approvers = Option.match(requested, { onNone: () => [], onSome: stringsOf })
      if (approvers.length === 0) return Option.isSome(requested)
      const userId = caller.userId ?? caller.principalId
      const username = Option.getOrNull(yield* repo.username(userId))
      if (!isApprover(approvers, { userId, username, role: caller.role })) {
        return yield* new Forbidden({
          code: "not_an_approver",
          message: `Only the approval's approvers may decide it: ${approvers.join(", ")}.`
        })
      }
      return true
    })

    /** A person grants the approval an intent asked for, for `ttl_seconds` (default 900). */
    const grant = Effect.fn("Approvals.grant")(function* (
      caller: Caller,
      intentId: string,
      input: { readonly note?: string | undefined; readonly ttl_seconds?: number | undefined }
    ) {
      // Only what a recorded decision asked for can be granted: an intent id alone (from a dry run, or computed)
      // names no approvers to check.
      if (!(yield* checkApprover(caller, intentId))) return yield* intentNotFound(intentId)
      const note = yield* kept(caller.workspaceId, input.note)
      // Under the intent's lock, so a denial committed meanwhile is seen, and one that comes later withdraws this.
      const row = yield* transaction(
        Effect.gen(function* () {
          yield* repo.lockIntent(caller.workspaceId, intentId)
          if (yield* repo.isDenied(caller.workspaceId, intentId)) {
            return yield* new Conflict({
              code: "approval_denied",
              message: `Intent ${intentId} was denied; a denied intent stays denied.`
            })
          }
          return yield* grants.upsertGrant(
            caller.workspaceId,
            intentId,
            caller.principalId,
            note,
            input.ttl_seconds ?? 900
          )
        })
      )
      return {
        intent_id: row.intent_id,
        granted_by: row.granted_by,
        expires_at: row.expires_at.toISOString(),
        created_at: row.created_at.toISOString()
      }
    })

    /** A person denies an intent that asked for approval; it then answers deny. Denying again keeps the first. */
    const deny = Effect.fn("Approvals.deny")(function* (
      caller: Caller,
      intentId: string,
      input: { readonly reason?: string | undefined }
    ) {
      const asked = yield* checkApprover(caller, intentId)
      if (!asked) return yield* intentNotFound(intentId)
      const reason = yield* kept(caller.workspaceId, input.reason)
      yield* repo.deny(caller.workspaceId, intentId, caller.principalId, reason)
      const [row] = yield* repo.list(caller.workspaceId, "denied", 1, Option.none(), intentId)
      // Unlisted only if retention pruned its trace in between: gone, as far as the caller can tell.
      return row === undefined ? yield* intentNotFound(intentId) : toApproval(row)
    })

    const list = Effect.fn("Approvals.list")(function* (
      workspaceId: string,
      status: ApprovalStatus,
      limit: number,
      cursor: string | undefined
    ) {
      const { next, page } = yield* pageByTime(cursor, limit, (after) =>
        Effect.map(repo.list(workspaceId, status, limit, after), (rows) =>
          rows.map((row) => ({ ...row, created_at: row.at, id: row.intent_id }))
        )
      )
      return { approvals: page.map(toApproval), ...next }
    })

    return { grant, deny, list }
  }),
  dependencies: [ApprovalsRepo.Default, AuthorizationRepo.Default]
}) {}
