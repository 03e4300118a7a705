/**
 * Workspace runtime keys. The plaintext (`gr_live_` + 32 random bytes) is
 * shown once; only its SHA-256 is stored. Authentication looks keys up
 * through an in-process cache that a revocation clears in every instance
 * (src/platform/ChangeNotices.ts), and `last_used_at`
 * is kept in memory and flushed in batches, so a request costs no write.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option } from "effect"
import { createHash } from "node:crypto"
import { auditedWrites } from "../audit/Chain.js"
import { every } from "../platform/Background.js"
import { makeNoticeCache } from "../platform/ChangeNotices.js"
import { NotFound } from "../http/Errors.js"
import { prefixedId, randomToken } from "../platform/Ids.js"
import { toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import { transactionOf } from "../platform/Sql.js"
import type { Caller } from "./Authentication.js"
import { ApiKeyId, WorkspaceId } from "./Domain.js"
import { type ApiKeyRow, SettingsRepo } from "./SettingsRepo.js"

export const LIVE_KEY_PREFIX = "gr_live_"
const LAST_USED_FLUSH = Duration.seconds(10)

const hashKey = (plaintext: string) => createHash("sha256").update(plaintext).digest("hex")

export const toApiKey = (row: ApiKeyRow) => ({
  id: ApiKeyId.make(row.id),
  name: row.name,
  prefix: row.prefix,
  status: row.status,
  environment: row.environment,
  environment_id: row.environment_id,
  principal_id: row.id,
  created_by: row.created_by,
  created_at: toTimestamp(row.created_at),
  last_used_at: toTimestampOrNull(row.last_used_at)
})

export interface ResolvedKey {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
}

export class ApiKeys extends Effect.Service<ApiKeys>()("identity/ApiKeys", {
  scoped: Effect.gen(function* () {
    const repo = yield* SettingsRepo
    const inTransaction = transactionOf(yield* SqlClient.SqlClient)
    const audited = yield* auditedWrites
    const cache = yield* makeNoticeCache<Option.Option<ResolvedKey>>("api_keys")
    const lastUsed = new Map<string, Date>()

    const flushLastUsed = Effect.suspend(() => {
      const batch = [...lastUsed].map(([id, at]) => ({ id, at }))
      lastUsed.clear()
      // A failed write puts its uses back for the next flush (a key used again since keeps the later use).
      return repo.touchApiKeys(batch).pipe(
        Effect.onError(() =>
          Effect.sync(() => {
            for (const { at, id } of batch) if (!lastUsed.has(id)) lastUsed.set(id, at)
          })
        )
      )
    }).pipe(
      // The repo turns database failures into defects: caught here too, or one outage would end the flushing.
      Effect.catchAllCause((cause) => Effect.logWarning("could not record API key use", cause)),
      Effect.withSpan("ApiKeys.flushLastUsed")
    )
    yield* Effect.forkScoped(every("api-key last-use flush", LAST_USED_FLUSH, flushLastUsed))
    yield* Effect.addFinalizer(() => flushLastUsed)

    const create = Effect.fn("ApiKeys.create")(function* (
      caller: Caller,
      input: { readonly name: string; readonly environment_id?: string | undefined }
    ) {
      // Held against a concurrent delete until the key is in: that delete then sees the key and refuses.
      const environment = yield* repo.lockEnvironment(caller.workspaceId, input.environment_id, "share")
      if (Option.isNone(environment)) {
        return yield* new NotFound({
          code: "environment_not_found",
          message: `Environment ${input.environment_id ?? "(default)"} does not exist in this workspace.`,
          details: [{ path: "environment_id", message: "not an environment of this workspace" }]
        })
      }
      const plaintext = `${LIVE_KEY_PREFIX}${randomToken(32)}`
      const id = prefixedId("key")
      yield* repo.insertApiKey({
        id,
        workspaceId: caller.workspaceId,
        environmentId: environment.value.id,
        name: input.name,
        prefix: plaintext.slice(0, 12),
        keyHash: hashKey(plaintext),
        createdBy: caller.userId ?? caller.principalId
      })
      const [row] = yield* repo.listApiKeys(caller.workspaceId, [id])
      return { api_key: toApiKey(row!), workspace_id: WorkspaceId.make(caller.workspaceId), plaintext_key: plaintext }
    }, inTransaction)

    const list = Effect.fn("ApiKeys.list")((workspaceId: string) =>
      Effect.map(repo.listApiKeys(workspaceId), (rows) => rows.map(toApiKey))
    )

    /** All-or-nothing: an id that is not a key of this workspace is a 404 that revokes nothing. */
    const revokeInTransaction = (workspaceId: string, unique: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const found = yield* repo.listApiKeys(workspaceId, unique)
        const missing = unique.filter((id) => !found.some((row) => row.id === id))
        if (missing.length > 0) {
          return yield* new NotFound({
            code: "api_key_not_found",
            message: `No API key ${missing.join(", ")} in this workspace; nothing was revoked.`,
            details: missing.map((id) => ({ path: "ids", message: `${id} not found` }))
          })
        }
        yield* repo.revokeApiKeys(workspaceId, unique)
        return (yield* repo.listApiKeys(workspaceId, unique)).map(toApiKey)
      })

    /** Revokes in the audit chain, attributed to the caller. */
    const revoke = Effect.fn("ApiKeys.revoke")(function* (workspaceId: string, ids: ReadonlyArray<string>) {
      const unique = [...new Set(ids)]
      if (unique.length === 0) return []
      const revoked = yield* audited(revokeInTransaction(workspaceId, unique))
      // Cached by key hash, which a revocation does not name: every instance drops them all. Only once committed:
      // dropped before, a request reading the key in between would cache it as active again.
      yield* cache.changedAll
      return revoked
    })

    /** Resolves an active key from its plaintext; `None` when unknown or revoked. */
    const authenticate = Effect.fn("ApiKeys.authenticate")(function* (plaintext: string) {
      const hash = hashKey(plaintext)
      const key = yield* cache.get(
        hash,
        repo.findActiveKeyByHash(hash).pipe(
          Effect.map(
            Option.map((row): ResolvedKey => ({
              id: row.id,
              workspaceId: row.workspace_id,
              environmentId: row.environment_id
            }))
          )
        )
      )
      const now = Date.now()
      if (Option.isSome(key)) lastUsed.set(key.value.id, new Date(now))
      return key
    })

    /** `authenticate` from the cache alone: undefined when the key is not cached (then call `authenticate`). */
    const peek = (plaintext: string) => {
      const key = cache.peek(hashKey(plaintext))
      if (key !== undefined && Option.isSome(key)) lastUsed.set(key.value.id, new Date())
      return key
    }

    return { create, list, revoke, authenticate, peek, flushLastUsed }
  }),
  dependencies: [SettingsRepo.Default]
}) {}
