/**
 * `POST /v1/events/evaluate`: the request's candidate policies and disabled
 * ids, turned into an overlay of the workspace's live policy set. Deciding
 * itself is Authorization.ts's, step for step; only its writes are left out.
 */
import { Either, Schema } from "effect"
import { compilePolicyText, type CompiledPolicy, type PolicyError } from "../catalog/PolicyLanguage.js"
import { BadRequest } from "../http/Errors.js"
import { boundedArray, Identifier, Limits, nonEmptyBounded } from "../platform/Schemas.js"
import { ProposedEvent } from "./Domain.js"

/** At most this many candidate documents, each at most `Limits.longText` characters (64 KiB). */
export const MAX_CANDIDATE_POLICIES = 50

export const EvaluateEvent = Schema.Struct({
  ...ProposedEvent.fields,
  candidate_policies: Schema.optional(
    boundedArray(nonEmptyBounded(Limits.longText), MAX_CANDIDATE_POLICIES).annotations({
      description: "Policy documents (YAML or JSON text) evaluated as enabled, each replacing a live policy with its id"
    })
  ),
  disable_policy_ids: Schema.optional(
    boundedArray(Identifier, 1000).annotations({ description: "Live policies left out of this evaluation" })
  )
}).annotations({ identifier: "EvaluateEvent" })
export type EvaluateEvent = typeof EvaluateEvent.Type

/** The live policies as this evaluation sees them. */
export type PolicyOverlay = (live: ReadonlyArray<CompiledPolicy>) => ReadonlyArray<CompiledPolicy>

/**
 * Compiles the candidates (every error at `candidate_policies.N.<path>`) into an overlay; a 400 when any is invalid.
 * Impact replay (src/impact) builds its overlay on this one.
 */
export const overlayOf = (
  request: Pick<EvaluateEvent, "candidate_policies" | "disable_policy_ids">
): Either.Either<PolicyOverlay, BadRequest> => {
  const errors: Array<PolicyError> = []
  const candidates: Array<CompiledPolicy> = []
  const seen = new Set<string>()
  ;(request.candidate_policies ?? []).forEach((text, index) => {
    const at = (path: string) => `candidate_policies.${index}${path === "" ? "" : `.${path}`}`
    Either.match(compilePolicyText(text), {
      onLeft: (found) => errors.push(...found.map((error) => ({ path: at(error.path), message: error.message }))),
      onRight: (policy) => {
        if (seen.has(policy.id)) errors.push({ path: at("id"), message: `another candidate has id ${policy.id}` })
        seen.add(policy.id)
        candidates.push(policy)
      }
    })
  })
  if (errors.length > 0) {
    return Either.left(
      new BadRequest({
        code: "validation_failed",
        message: errors.map((error) => `${error.path}: ${error.message}`).join("; "),
        details: errors
      })
    )
  }
  const left = new Set([...seen, ...(request.disable_policy_ids ?? [])])
  return Either.right((live) => [...live.filter((policy) => !left.has(policy.id)), ...candidates])
}

/** The event alone, as POST /v1/events takes it. */
export const eventOf = ({ candidate_policies: _c, disable_policy_ids: _d, ...event }: EvaluateEvent) => event
