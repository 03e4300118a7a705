/** Run events between the API and the writer: an append's new event, and a stored row as the API answers it. */
import { Either } from "effect"
import { BadRequest } from "../http/Errors.js"
import { prefixedId } from "../platform/Ids.js"
import { isInstant, toTimestamp } from "../platform/Schemas.js"
import { RunEventId, type RunEventKind as RunEventKinds, RunId } from "./Domain.js"
import type { RunEventRow } from "./Repo.js"
import type { NewRunEvent } from "./RunEventWriter.js"

type RunEventKind = typeof RunEventKinds.Type

/** What an append asks for. */
export interface RunEventInput {
  readonly kind: RunEventKind
  readonly label?: string | undefined
  readonly input_summary?: string | undefined
  readonly output_summary?: string | undefined
  readonly metadata?: unknown
  readonly occurred_at?: string | undefined
}

/**
 * The event to append (a new id; `occurred_at` now unless given), or the 400 for a bad timestamp.
 * `environmentId` is the caller's bound environment (a runtime key's), null when it may append anywhere.
 */
export const newRunEvent = (
  workspaceId: string,
  runId: string,
  environmentId: string | null,
  input: RunEventInput
): Either.Either<NewRunEvent, BadRequest> => {
  const occurredAt = input.occurred_at === undefined ? new Date() : new Date(input.occurred_at)
  if (input.occurred_at !== undefined && !isInstant(input.occurred_at)) {
    return Either.left(
      new BadRequest({
        code: "validation_failed",
        message: "occurred_at: expected an RFC 3339 timestamp",
        details: [{ path: "occurred_at", message: "expected an RFC 3339 timestamp" }]
      })
    )
  }
  return Either.right({
    id: prefixedId("rev"),
    workspaceId,
    runId,
    environmentId,
    kind: input.kind,
    label: input.label ?? null,
    inputSummary: input.input_summary ?? null,
    outputSummary: input.output_summary ?? null,
    metadata: input.metadata ?? null,
    occurredAt
  })
}

export const toRunEvent = (row: RunEventRow) => ({
  id: RunEventId.make(row.id),
  run_id: RunId.make(row.run_id),
  workspace_id: row.workspace_id,
  kind: row.kind,
  sequence: row.sequence,
  label: row.label,
  input_summary: row.input_summary,
  output_summary: row.output_summary,
  metadata: row.metadata,
  created_at: toTimestamp(row.created_at),
  occurred_at: toTimestamp(row.occurred_at)
})
