/**
 * Workspace runtime keys. The plaintext (`gr_live_` + 32 random bytes) is
 * shown once; only its SHA-256 is stored. Authentication looks keys up
 * through a short-lived in-process cache (revocation clears it here at once;
 * other processes see a revocation within KEY_CACHE_TTL), and `last_used_at`
 * is kept in memory and flushed in batches, so a request costs no write.
 */
import { Duration, Effect, Option, Schedule } from "effect"
import { createHash } from "node:crypto"
import { NotFound } from "../platform/Errors.js"
import { prefixedId, randomToken } from "../platform/Ids.js"
import { toTimestamp, toTimestampOrNull } from "../platform/Schemas.js"
import type { Caller } from "./Authentication.js"
import { ApiKeyId } from "./Domain.js"
import { type ApiKeyRow, IdentityRepo } from "./Repo.js"

export const LIVE_KEY_PREFIX = "gr_live_"
const KEY_CACHE_TTL = Duration.seconds(5)
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

interface ResolvedKey {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
}

export class ApiKeys extends Effect.Service<ApiKeys>()("identity/ApiKeys", {
  scoped: Effect.gen(function* () {
    const repo = yield* IdentityRepo
    const cache = new Map<string, { readonly key: Option.Option<ResolvedKey>; readonly until: number }>()
    const lastUsed = new Map<string, Date>()

    const flushLastUsed = Effect.suspend(() => {
      const batch = [...lastUsed].map(([id, at]) => ({ id, at }))
      lastUsed.clear()
      return repo.touchApiKeys(batch)
    }).pipe(Effect.catchAll((error) => Effect.logWarning("could not record API key use", error)))
    yield* Effect.forkScoped(flushLastUsed.pipe(Effect.repeat(Schedule.spaced(LAST_USED_FLUSH))))
    yield* Effect.addFinalizer(() => flushLastUsed)

    const create = (caller: Caller, input: { readonly name: string; readonly environment_id?: string | undefined }) =>
      Effect.gen(function* () {
        const environment =
          input.environment_id === undefined
            ? yield* repo.findDefaultEnvironment(caller.workspaceId)
            : yield* repo.findEnvironment(caller.workspaceId, input.environment_id)
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
        return { api_key: toApiKey(row!), plaintext_key: plaintext }
      })

    const list = (workspaceId: string) => Effect.map(repo.listApiKeys(workspaceId), (rows) => rows.map(toApiKey))

    /** All-or-nothing: an id that is not a key of this workspace is a 404 that revokes nothing. */
    const revoke = (workspaceId: string, ids: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const unique = [...new Set(ids)]
        if (unique.length === 0) return []
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
        cache.clear()
        return (yield* repo.listApiKeys(workspaceId, unique)).map(toApiKey)
      })

    /** Resolves an active key from its plaintext; `None` when unknown or revoked. */
    const authenticate = (plaintext: string) =>
      Effect.gen(function* () {
        const hash = hashKey(plaintext)
        const now = Date.now()
        const cached = cache.get(hash)
        const key =
          cached !== undefined && cached.until > now
            ? cached.key
            : yield* repo.findActiveKeyByHash(hash).pipe(
                Effect.map(
                  Option.map((row) => ({
                    id: row.id,
                    workspaceId: row.workspace_id,
                    environmentId: row.environment_id
                  }))
                ),
                Effect.tap((resolved) =>
                  Effect.sync(() => cache.set(hash, { key: resolved, until: now + Duration.toMillis(KEY_CACHE_TTL) }))
                )
              )
        if (Option.isSome(key)) lastUsed.set(key.value.id, new Date(now))
        return key
      })

    return { create, list, revoke, authenticate, flushLastUsed }
  }),
  dependencies: [IdentityRepo.Default]
}) {}
