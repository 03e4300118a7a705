/**
 * The pure part of an impact replay: the candidate policy set as an overlay
 * of the live one (the dry run's, DryRun.ts, plus stored policies to enable),
 * and a tally that replays retained decision inputs one by one through
 * `evaluate` (Decisions.ts, the evaluator of live decisions) under the live
 * and the candidate set, then states the result canonically.
 *
 * A decision is replayed from its trace's retained request (kept as the
 * workspace's data_handling_mode allowed when it was made). Its approval
 * grant counts as it did then; provenance inferred from its run is not
 * replayed (labels the caller gave are).
 */
import { Either, Schema } from "effect"
import { createHash } from "node:crypto"
import { decideWithin } from "../authorization/DecisionAllowance.js"
import { evaluate as evaluateUncut, modesOf, type Environment } from "../authorization/Decisions.js"
import { EventKind, ProposedAction } from "../authorization/Domain.js"
import { overlayOf, type PolicyOverlay } from "../authorization/DryRun.js"
import type { CheckerMode, CheckerName, Decision, DecisionEffect } from "../authorization/Pipeline.js"
import { canonicalJson } from "../authorization/Receipts.js"
import { PolicyDocument } from "../catalog/Domain.js"
import { type CompiledPolicy, compilePolicy, parseDocumentText } from "../catalog/PolicyLanguage.js"
import type { Snapshot } from "../catalog/Snapshot.js"
import { BadRequest } from "../http/Errors.js"
import type { RuntimeConfig } from "../identity/WorkspaceSettings.js"
import { type ImpactResult, MAX_EXAMPLES, type StoredRequest } from "./Domain.js"
import { documentDigest } from "./Gate.js"

const EFFECTS: ReadonlyArray<DecisionEffect> = ["permit", "deny", "defer", "rewrite"]

/** Caught, blocked: the candidate's effect is anything but permit. */
const stops = (effect: DecisionEffect) => effect !== "permit"

const decodeDocument = Schema.decodeUnknownEither(PolicyDocument)

const invalid = (path: string, message: string) =>
  new BadRequest({ code: "validation_failed", message: `${path}: ${message}`, details: [{ path, message }] })

/** The candidate set over the live one, and the digests of the documents it evaluates as enabled; a 400 when invalid. */
export const candidateOf = (
  request: StoredRequest
): Either.Either<
  {
    readonly overlay: PolicyOverlay
    readonly digests: ReadonlyArray<string>
    /** Ids the overlay removes, replaces or adds; every other policy is the live one, unchanged. */
    readonly changed: ReadonlySet<string>
  },
  BadRequest
> => {
  const candidates = request.candidate_policies ?? []
  const disabled = new Set(request.disable_ids ?? [])
  return Either.gen(function* () {
    const dry = yield* overlayOf({ candidate_policies: candidates, disable_policy_ids: request.disable_ids })
    const enabled: Array<CompiledPolicy> = []
    for (const [index, stored] of request.enabled_documents.entries()) {
      const path = `enable_ids.${index}`
      if (disabled.has(stored.id)) return yield* Either.left(invalid(path, `${stored.id} is also in disable_ids`))
      const document = decodeDocument(stored.document)
      const policy = Either.isRight(document) ? compilePolicy(document.right, stored.version) : undefined
      if (policy === undefined || policy.errors.length > 0) {
        return yield* Either.left(invalid(path, `the stored document of ${stored.id} does not compile`))
      }
      enabled.push(policy)
    }
    const enabledIds = new Set(enabled.map((policy) => policy.id))
    const texts = candidates.flatMap((text) =>
      Either.getOrElse(
        Either.map(parseDocumentText(text), (v) => [v]),
        () => []
      )
    )
    const clash = texts.findIndex((value) => enabledIds.has(String(value["id"])))
    if (clash >= 0)
      return yield* Either.left(invalid(`candidate_policies.${clash}.id`, "this id is also in enable_ids"))
    const digests = [
      ...new Set([...texts, ...request.enabled_documents.map((stored) => stored.document)].map(documentDigest))
    ]
    const overlay: PolicyOverlay = Object.assign(
      (live: ReadonlyArray<CompiledPolicy>) => [
        ...dry(live).filter((policy) => !enabledIds.has(policy.id)),
        ...enabled
      ],
      { candidates: dry.candidates }
    )
    const changed = new Set([...texts.map((value) => String(value["id"])), ...disabled, ...enabledIds])
    return { overlay, digests: digests.sort(), changed }
  })
}

/** A retained decision as the replay reads it (a trace row, its request as kept). */
export interface RetainedDecision {
  readonly id: string
  readonly agent_id: string
  readonly environment_id: string
  readonly decision: string
  readonly latest_review_outcome: string | null
  readonly granted: boolean
  readonly request: unknown
}

/** Content and params kept as metadata only (a digest object) are not strings and objects: not replayable. */
const RetainedRequest = Schema.Struct({
  kind: EventKind,
  action: ProposedAction,
  metadata: Schema.optional(Schema.Unknown)
})
const decodeRequest = Schema.decodeUnknownEither(RetainedRequest)

/** An environment deleted since: the workspace's modes, without overrides. */
const noOverrides: Environment = {
  slug: "",
  isDefault: false,
  modes: {
    approval_checker_mode: null,
    flow_checker_mode: null,
    memory_checker_mode: null,
    param_checker_mode: null,
    updated_at: null
  }
}

export interface ReplaySets {
  readonly workspaceId: string
  readonly live: Snapshot
  readonly overlay: PolicyOverlay
  readonly changed: ReadonlySet<string>
  readonly config: RuntimeConfig
  /** Landed red-team attacks, by the trace of their decision. */
  readonly landed: ReadonlyMap<string, { readonly job_id: string; readonly seq: number }>
  /** DECISION_MATCH_MS: a replayed decision is cut where a live one is. */
  readonly matchMillis: number
}

interface Cell {
  count: number
  readonly examples: Array<string>
}

/**
 * At most this many agents are counted in `affected_agents`: the first whose decisions the candidate changes, in
 * replay order. A workspace deciding for an agent id per end user had one entry per id, millions in memory and
 * in the stored result; `changed` still counts every decision.
 */
export const MAX_AFFECTED_AGENTS = 1_000

const example = (list: Array<string>, id: string) => {
  if (list.length < MAX_EXAMPLES) list.push(id)
}

/** Replays decisions in the order given; `result()` is a function of them and the sets alone. */
export const makeTally = (sets: ReplaySets) => {
  const candidate: Snapshot = { ...sets.live, policies: sets.overlay(sets.live.policies) }
  const defaultEffect = sets.config.settings.default_action
  /** The live policies the candidate set removes or replaces. */
  const removed: Snapshot = {
    ...sets.live,
    policies: sets.live.policies.filter((policy) => sets.changed.has(policy.id))
  }
  const evaluate = (...args: Parameters<typeof evaluateUncut>) =>
    decideWithin(sets.matchMillis, () => evaluateUncut(...args))
  const touches = (decision: Decision) =>
    decision.findings.some((finding) => finding.policy_id !== null && sets.changed.has(finding.policy_id))
  const modesByEnvironment = new Map<string, Readonly<Record<CheckerName, CheckerMode>>>()
  const modesFor = (environmentId: string) => {
    let modes = modesByEnvironment.get(environmentId)
    if (modes === undefined) {
      modes = modesOf(sets.config, sets.config.environments.get(environmentId) ?? noOverrides)
      modesByEnvironment.set(environmentId, modes)
    }
    return modes
  }
  const cells = new Map<string, Cell>()
  const agents = new Map<string, number>()
  const review = {
    false_positive: { reviewed: 0, now_permitted: 0, example_trace_ids: [] as Array<string> },
    missed_issue: { reviewed: 0, now_caught: 0, example_trace_ids: [] as Array<string> }
  }
  const redteam = { landed: 0, would_block: 0, attacks: [] as Array<{ job_id: string; seq: number; trace_id: string }> }
  let replayed = 0
  let skipped = 0
  let changed = 0
  let mismatches = 0

  const add = (row: RetainedDecision) => {
    const request = decodeRequest(row.request)
    if (Either.isLeft(request)) {
      skipped++
      return
    }
    const event = {
      kind: request.right.kind,
      principal: { agent_id: row.agent_id, environment_id: row.environment_id, workspace_id: sets.workspaceId },
      action: request.right.action,
      metadata: request.right.metadata
    }
    const modes = modesFor(row.environment_id)
    const decided = evaluate(candidate, event, modes, row.granted, defaultEffect)
    const to = decided.effect
    // Every policy acts only through its findings (Pipeline.decide): when none of the changed policies yields one,
    // in the candidate set or (probed alone) in the live one, both sets decide alike and one evaluation suffices.
    const differs =
      touches(decided) ||
      (removed.policies.length > 0 && touches(evaluate(removed, event, modes, row.granted, defaultEffect)))
    const from = differs ? evaluate(sets.live, event, modes, row.granted, defaultEffect).effect : to
    replayed++
    if (from !== row.decision) mismatches++
    const key = `${from}>${to}`
    let cell = cells.get(key)
    if (cell === undefined) {
      cell = { count: 0, examples: [] }
      cells.set(key, cell)
    }
    cell.count++
    example(cell.examples, row.id)
    if (from !== to) {
      changed++
      const counted = agents.get(row.agent_id)
      if (counted !== undefined || agents.size < MAX_AFFECTED_AGENTS) agents.set(row.agent_id, (counted ?? 0) + 1)
    }
    if (row.latest_review_outcome === "false_positive") {
      review.false_positive.reviewed++
      if (!stops(to)) {
        review.false_positive.now_permitted++
        example(review.false_positive.example_trace_ids, row.id)
      }
    } else if (row.latest_review_outcome === "missed_issue") {
      review.missed_issue.reviewed++
      if (stops(to)) {
        review.missed_issue.now_caught++
        example(review.missed_issue.example_trace_ids, row.id)
      }
    }
    const attack = sets.landed.get(row.id)
    if (attack !== undefined) {
      redteam.landed++
      if (stops(to)) {
        redteam.would_block++
        if (redteam.attacks.length < MAX_EXAMPLES) redteam.attacks.push({ ...attack, trace_id: row.id })
      }
    }
  }

  const result = (): ImpactResult => ({
    decisions_replayed: replayed,
    skipped,
    changed,
    recorded_mismatches: mismatches,
    transitions: EFFECTS.flatMap((from) =>
      EFFECTS.flatMap((to) => {
        const cell = cells.get(`${from}>${to}`)
        return cell === undefined ? [] : [{ from, to, count: cell.count, example_trace_ids: [...cell.examples] }]
      })
    ),
    affected_agents: [...agents.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([agent_id, count]) => ({ agent_id, changed: count })),
    human_review: review,
    redteam
  })

  return { add, result, replayed: () => replayed + skipped }
}

/** SHA-256 of the result's canonical JSON (no job id or timestamps in it): equal replays, equal digests. */
export const resultDigest = (result: ImpactResult) => createHash("sha256").update(canonicalJson(result)).digest("hex")
