/**
 * `POST /v1/events/evaluate`: the request's candidate policies and disabled
 * ids, turned into an overlay of the workspace's live policy set. Deciding
 * itself is Authorization.ts's, step for step; only its writes are left out.
 */
import { Either, Schema } from "effect"
import { compileBudgetErrors } from "../catalog/CompileBudget.js"
import {
  compilePolicyText,
  type CompiledPolicy,
  parseDocumentText,
  type PolicyError
} from "../catalog/PolicyLanguage.js"
import { BadRequest } from "../http/Errors.js"
import { candidateDigest } from "../policysets/Digest.js"
import { boundedArray, Identifier, Limits, nonEmptyBounded } from "../platform/Schemas.js"
import { AuthorizationResponse, ProposedEvent } from "./Domain.js"

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

/** A dry run's answer: a decision, and the digest of the set it evaluated (candidates included; nothing stored). */
export class EvaluateResponse extends Schema.Class<EvaluateResponse>("EvaluateResponse")({
  ...AuthorizationResponse.fields,
  policy_set_digest: Schema.NullOr(Schema.String).annotations({
    description:
      "Extension: the digest of the policy set evaluated, candidate documents named by their sha-256; not stored, so GET /v1/policy-sets/{digest} knows it only if a real decision used the same set. Null when the registry could not be read."
  })
}) {}

/** The live policies as this evaluation sees them; `candidates`: each candidate's text as its sha-256, by policy id. */
export interface PolicyOverlay {
  (live: ReadonlyArray<CompiledPolicy>): ReadonlyArray<CompiledPolicy>
  readonly candidates: ReadonlyMap<string, string>
}

/**
 * Compiles the candidates (every error at `candidate_policies.N.<path>`) into an overlay; a 400 when any is invalid.
 * Impact replay (src/impact) builds its overlay on this one.
 */
export const overlayOf = (
  request: Pick<EvaluateEvent, "candidate_policies" | "disable_policy_ids">
): Either.Either<PolicyOverlay, BadRequest> => {
  const texts = request.candidate_policies ?? []
  // Measured before anything compiles: the candidates' regexes together stay within one request's budget.
  const errors: Array<PolicyError> = compileBudgetErrors(
    texts.map((text) =>
      Either.match(parseDocumentText(text), { onLeft: () => undefined, onRight: (doc) => doc["match"] })
    ),
    "candidate_policies"
  )
  const candidates: Array<CompiledPolicy> = []
  const seen = new Set<string>()
  const digests = new Map<string, string>()
  if (errors.length === 0)
    texts.forEach((text, index) => {
      const at = (path: string) => `candidate_policies.${index}${path === "" ? "" : `.${path}`}`
      Either.match(compilePolicyText(text), {
        onLeft: (found) => errors.push(...found.map((error) => ({ path: at(error.path), message: error.message }))),
        onRight: (policy) => {
          if (seen.has(policy.id)) errors.push({ path: at("id"), message: `another candidate has id ${policy.id}` })
          seen.add(policy.id)
          digests.set(policy.id, candidateDigest(text))
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
  const overlay = (live: ReadonlyArray<CompiledPolicy>) => [
    ...live.filter((policy) => !left.has(policy.id)),
    ...candidates
  ]
  return Either.right(Object.assign(overlay, { candidates: digests }))
}

/** The event alone, as POST /v1/events takes it. */
export const eventOf = ({ candidate_policies: _c, disable_policy_ids: _d, ...event }: EvaluateEvent) => event
