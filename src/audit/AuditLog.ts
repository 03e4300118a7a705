/**
 * The audit log's reads: the filtered list, the walk that verifies a
 * workspace's chain, and retention's prune behind a signed checkpoint.
 * Appends happen in the database (migration 0021's triggers), in the
 * transaction of each change.
 */
import { createPublicKey, verify as verifyBytes } from "node:crypto"
import { Cause, Effect, Option } from "effect"
import { canonicalJson, ReceiptSigner } from "../authorization/Receipts.js"
import { decodeCursor, encodeCursor, invalidCursor } from "../platform/Cursor.js"
import { rowHash } from "./Chain.js"
import { type ListAuditEventsParams, toAuditEvent, type VerifyResult } from "./Domain.js"
import { AuditRepo } from "./Repo.js"

const VERIFY_BATCH = 1_000

/** What a checkpoint signs: the chain's new starting point. */
const checkpointContent = (workspaceId: string, seq: number, hash: string) => ({
  kind: "audit_checkpoint",
  workspace_id: workspaceId,
  seq,
  hash
})

export class AuditLog extends Effect.Service<AuditLog>()("audit/AuditLog", {
  effect: Effect.gen(function* () {
    const repo = yield* AuditRepo
    const signer = yield* ReceiptSigner
    const publicKeys = signer.jwks.keys.map((jwk) => createPublicKey({ key: { ...jwk }, format: "jwk" }))

    /** Whether `signature` is our JWS over exactly this checkpoint. */
    const checkpointSigned = (signature: string, content: ReturnType<typeof checkpointContent>) => {
      const [header, payload, sig] = signature.split(".")
      if (header === undefined || payload === undefined || sig === undefined) return false
      const signed = Buffer.from(payload, "base64url").toString("utf8")
      if (signed !== canonicalJson(content)) return false
      const input = Buffer.from(`${header}.${payload}`)
      return publicKeys.some((key) => verifyBytes(null, input, key, Buffer.from(sig, "base64url")))
    }

    const list = Effect.fn("AuditLog.list")(function* (
      workspaceId: string,
      params: ListAuditEventsParams,
      limit: number
    ) {
      const cursor = params.cursor === undefined ? Option.none() : decodeCursor(params.cursor, 1)
      if (params.cursor !== undefined && Option.isNone(cursor)) return yield* invalidCursor
      const beforeSeq = Option.map(cursor, ([seq]) => Number(seq))
      if (Option.isSome(beforeSeq) && !Number.isSafeInteger(beforeSeq.value)) return yield* invalidCursor
      const [actorKind, ...actorRest] = params.actor === undefined ? [] : params.actor.split(":")
      const rows = yield* repo.list(
        workspaceId,
        {
          resourceType: params.resource_type,
          resourceId: params.resource_id,
          actorKind,
          actorId: actorKind === undefined ? undefined : actorKind === "system" ? "system" : actorRest.join(":"),
          start: params.start === undefined ? undefined : new Date(params.start),
          end: params.end === undefined ? undefined : new Date(params.end)
        },
        beforeSeq,
        limit + 1
      )
      const page = rows.slice(0, limit)
      const last = page[page.length - 1]
      return {
        audit_events: page.map(toAuditEvent),
        ...(rows.length > limit && last !== undefined ? { next_cursor: encodeCursor([String(last.seq)]) } : {})
      }
    })

    /**
     * Walks the chain from its anchor (the signed checkpoint of the last prune,
     * or the start) to the head: each row must link to the previous row's hash,
     * follow it by one position, and hash to its own `hash`; the last row must be
     * the head's (a cut-off tail answers valid false with first_break null). All in one snapshot: a change
     * committed meanwhile (one more row than the head said) or a prune (rows gone mid-walk) is no break.
     */
    const verify = (workspaceId: string) => repo.inSnapshot(walk(workspaceId))

    const walk = Effect.fn("AuditLog.verify")(function* (workspaceId: string) {
      const head = yield* repo.head(workspaceId)
      if (Option.isNone(head))
        return { valid: true, checked: 0, first_break: null, anchor: null } satisfies VerifyResult
      const { anchor_seq, anchor_hash, anchor_signature } = head.value
      const anchor =
        anchor_hash === null
          ? null
          : {
              seq: anchor_seq,
              hash: anchor_hash,
              signature_valid:
                anchor_signature !== null &&
                checkpointSigned(anchor_signature, checkpointContent(workspaceId, anchor_seq, anchor_hash))
            }
      let expectedPrev: string | null = anchor_hash
      let expectedSeq = anchor_seq + 1
      let checked = 0
      let firstBreak: string | null = null
      while (true) {
        const rows = yield* repo.chainAfter(workspaceId, expectedSeq - 1, VERIFY_BATCH)
        for (const row of rows) {
          checked++
          const holds =
            row.seq === expectedSeq && row.prev_hash === expectedPrev && rowHash(row, row.prev_hash) === row.hash
          if (!holds && firstBreak === null) firstBreak = row.id
          expectedPrev = row.hash
          expectedSeq = row.seq + 1
        }
        if (rows.length < VERIFY_BATCH) break
      }
      const tailHolds = expectedSeq - 1 === head.value.seq && expectedPrev === head.value.hash
      return {
        valid: firstBreak === null && tailHolds && (anchor === null || anchor.signature_valid),
        checked,
        first_break: firstBreak,
        anchor
      } satisfies VerifyResult
    })

    /**
     * Deletes the workspace's audit rows created before `cutoff`, at most `batchSize` per transaction: each step
     * leaves the last row it deletes, signed, as the chain's new anchor (verify starts there, so the rest of the
     * chain still checks). The head row is locked only for one short step, so the workspace's changes, which
     * append under that lock, wait for one batch rather than for the whole backlog.
     */
    const pruneWorkspace = Effect.fn("AuditLog.pruneWorkspace")(function* (
      workspaceId: string,
      cutoff: Date,
      batchSize: number
    ) {
      let deleted = 0
      let batches = 0
      while (true) {
        const last = yield* repo.lastBeforeWithin(workspaceId, cutoff, batchSize)
        if (Option.isNone(last)) break
        const signature = signer.signNow(checkpointContent(workspaceId, last.value.seq, last.value.hash))
        const count = yield* repo.pruneThrough(last.value, signature)
        batches++
        deleted += count
        // 0: another pruner moved the anchor past this row; it prunes the rest.
        if (count === 0) break
        yield* Effect.yieldNow()
      }
      return { deleted, batches }
    })

    /**
     * Prunes every workspace's rows created before `cutoff` (`pruneWorkspace`); answers rows deleted. A workspace
     * whose prune fails is logged and the others go on (it ended the pass for every workspace after it).
     */
    const prune = Effect.fn("AuditLog.prune")(function* (cutoff: Date, batchSize: number) {
      let deleted = 0
      for (const workspaceId of yield* repo.workspacesWithRowsBefore(cutoff)) {
        deleted += yield* pruneWorkspace(workspaceId, cutoff, batchSize).pipe(
          Effect.map((pruned) => pruned.deleted),
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.as(
                  Effect.logWarning("audit prune: a workspace's prune failed", cause).pipe(
                    Effect.annotateLogs({ workspace_id: workspaceId })
                  ),
                  0
                )
          )
        )
      }
      return deleted
    })

    return { list, verify, prune, pruneWorkspace }
  }),
  dependencies: [AuditRepo.Default, ReceiptSigner.Default]
}) {}
