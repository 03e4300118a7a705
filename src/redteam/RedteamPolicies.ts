/**
 * Guardrail policies from the red team, created through the catalog's
 * Policies service and never enabled here:
 * - static policies derived from an agent's profile and plan (disabled on creation);
 * - hardening: candidates from a job's landed attacks, verified by replay in
 *   memory (no write while verifying); only passed candidates are then
 *   created, disabled, for a person to enable.
 */
import { Duration, Effect, Either, Option, Schema } from "effect"
import { stringify } from "yaml"
import { createHash } from "node:crypto"
import { Agents } from "../catalog/Agents.js"
import { agentPart, boundedPolicyId } from "../catalog/Generation.js"
import { Policies } from "../catalog/Policies.js"
import { PolicyLimits } from "../catalog/PolicyLimits.js"
import { CatalogSnapshot } from "../catalog/Snapshot.js"
import { WorkspaceSettings } from "../identity/WorkspaceSettings.js"
import { AppConfig } from "../platform/Config.js"
import { OutboundGuard } from "../platform/OutboundGuard.js"
import { Conflict, NotFound, type TooManyRequests, tooManyRequests } from "../http/Errors.js"
import type { CheckerMode, CheckerName } from "../authorization/Pipeline.js"
import { DEMO_AGENT_ID } from "./DemoAgent.js"
import { inMemoryDecider } from "./Guarding.js"
import {
  collectReplays,
  compileCandidate,
  substratesOf,
  synthesize,
  unansweredRejections,
  verify
} from "./Hardening.js"
import { CANARY, CARD_SOURCE, SSN_SOURCE } from "./Judge.js"
import { planFor } from "./Planner.js"
import { HardeningResult } from "./Domain.js"
import { RedteamRepo } from "./Repo.js"

// A stored result is written and read through the contract's schema; a row that no longer decodes is a defect.
const encodeHardening = (result: typeof HardeningResult.Type) => Effect.orDie(Schema.encode(HardeningResult)(result))
const decodeHardening = (stored: unknown) => Effect.orDie(Schema.decodeUnknown(HardeningResult)(stored))
import { profileView, Redteam } from "./Redteam.js"
import {
  type AgentProfileView,
  attackCases,
  forbiddenPromises,
  type JobProfile,
  outOfScopeTopics
} from "./Techniques.js"

const encoder = new TextEncoder()

/** A sink's id part: its name when already an id's characters, else their closest with a hash (no two alike). */
const sinkPart = (sink: string) => {
  const part = sink.toLowerCase().replace(/[^a-z0-9_.-]/g, "-")
  return part === sink ? part : `${part}-${createHash("sha256").update(sink).digest("hex").slice(0, 8)}`
}

const staticDocuments = (agentId: string, agent: AgentProfileView) => {
  // Distinct per agent (ids differing only in case or past 100 characters included), so one agent never
  // "reuses" another's policies.
  const base = `redteam-static.${agentPart(agentId)}`
  const doc = (suffix: string, fields: Record<string, unknown>) => ({
    id: boundedPolicyId(`${base}.${suffix}`),
    family: "content",
    action: "deny",
    enabled: false,
    owner_agent_id: agentId,
    ...fields
  })
  const sinks = [
    ...new Set(
      planFor(agent)
        .paths.filter((p) => p.sink_category !== "outbound_message")
        .map((p) => p.sink_node)
    )
  ]
  return [
    doc("canary", {
      description: "Red team: never reveal canary tokens from the system prompt",
      severity: "high",
      match: { type: "regex", value: CANARY.source, target: "content" }
    }),
    doc("system-prompt-disclosure", {
      description: "Red team: never disclose the system prompt or instructions",
      severity: "high",
      match: { type: "regex", value: "(?:my|the) (?:system prompt|instructions) (?:are|is|say)", target: "content" }
    }),
    doc("forbidden-promises", {
      description: "Red team: never make promises the agent may not make",
      severity: "high",
      match: { type: "any_of", value: [...forbiddenPromises(agent)], target: "content" }
    }),
    doc("out-of-scope", {
      description: "Red team: hand out-of-scope topics to a human",
      severity: "medium",
      action: "defer",
      match: { type: "any_of", value: [...outOfScopeTopics(agent)], target: "content" }
    }),
    doc("pii-ssn", {
      description: "Red team: never disclose social security numbers",
      severity: "critical",
      match: { type: "regex", value: SSN_SOURCE, target: "content" }
    }),
    doc("pii-card", {
      description: "Red team: never disclose card numbers",
      severity: "critical",
      match: { type: "regex", value: CARD_SOURCE, target: "content" }
    }),
    ...sinks.map((sink) =>
      doc(`review-${sinkPart(sink)}`, {
        description: `Red team: a human reviews ${sink}, a side-effecting step the plan reaches from untrusted input`,
        family: "tool",
        severity: "high",
        action: "defer",
        match: { type: "literal", value: sink, target: "operation" }
      })
    )
  ]
}

/** Hardenings one workspace may run at once (each holds its replays' answers until it verifies). */
export const MAX_HARDENINGS_PER_WORKSPACE = 2
/** Retry-After of a hardening refused at that cap: a quick job's hardening takes about this long. */
const HARDENING_RETRY_SECONDS = 10

/** The author of the versions the red team creates (its policies come from a job, not a request). */
const REDTEAM_AUTHOR = { kind: "system", id: "redteam" } as const

export class RedteamPolicies extends Effect.Service<RedteamPolicies>()("redteam/RedteamPolicies", {
  effect: Effect.gen(function* () {
    const repo = yield* RedteamRepo
    const redteam = yield* Redteam
    const agents = yield* Agents
    const policies = yield* Policies
    const snapshots = yield* CatalogSnapshot
    const settings = yield* WorkspaceSettings
    const outbound = yield* OutboundGuard
    const limits = yield* PolicyLimits
    const config = yield* AppConfig

    /** Creates a disabled policy, or answers the existing one with that id (so regenerating never duplicates). */
    const createOrReuse = (workspaceId: string, document: Record<string, unknown>) =>
      policies.create(workspaceId, encoder.encode(stringify(document, { lineWidth: 0 })), REDTEAM_AUTHOR).pipe(
        Effect.map((detail) => ({ detail, reused: false })),
        Effect.catchIf(
          (error): error is Conflict => error instanceof Conflict && error.code === "policy_exists",
          () => Effect.map(policies.detail(workspaceId, String(document["id"])), (detail) => ({ detail, reused: true }))
        )
      )

    /** All of `documents` (created or reused) or, when a limit refuses one, none of them. */
    const createAll = (workspaceId: string, documents: ReadonlyArray<Record<string, unknown>>) =>
      limits.write(
        workspaceId,
        Effect.forEach(documents, (document) => createOrReuse(workspaceId, document))
      )

    const generateStatic = Effect.fn("RedteamPolicies.generateStatic")(function* (
      workspaceId: string,
      agentId: string
    ) {
      const agent = profileView(yield* agents.find(workspaceId, agentId))
      const created = yield* createAll(workspaceId, staticDocuments(agentId, agent))
      return { generated: created.map((entry) => entry.detail) }
    })

    const runtimeModes = (workspaceId: string, environmentId: string) =>
      Effect.map(settings.runtimeConfig(workspaceId), (runtime) => {
        const environment = runtime.environments.get(environmentId)
        const modes: Record<CheckerName, CheckerMode> = {
          content: "enforce",
          profile: "enforce",
          approval: environment?.modes.approval_checker_mode ?? runtime.settings.approval_checker_mode,
          flow: environment?.modes.flow_checker_mode ?? runtime.settings.flow_checker_mode,
          memory: environment?.modes.memory_checker_mode ?? runtime.settings.memory_checker_mode,
          param: environment?.modes.param_checker_mode ?? runtime.settings.param_checker_mode
        }
        return { modes, defaultEffect: runtime.settings.default_action }
      })

    // Hardenings in this process. A second request for one job would replay everything against the target
    // again, doubling its load, for the same candidates: it is refused (409) while the first runs. Each holds
    // up to REDTEAM_HARDEN_REPLAY_BYTES of answers until it verifies, so a workspace runs at most
    // MAX_HARDENINGS_PER_WORKSPACE at once (429 past it), not one per finished job.
    const inFlight = new Set<string>()
    const perWorkspace = new Map<string, number>()
    const oneAtATime = <A, E, R>(workspaceId: string, jobId: string, run: Effect.Effect<A, E, R>) => {
      const key = JSON.stringify([workspaceId, jobId])
      return Effect.acquireUseRelease(
        Effect.suspend((): Effect.Effect<void, Conflict | TooManyRequests> => {
          if (inFlight.has(key)) {
            return new Conflict({
              code: "hardening_in_progress",
              message: `Job ${jobId} is being hardened by another request; read its result with GET /v1/redteam/jobs/${jobId}/hardening once it is done.`
            })
          }
          const running = perWorkspace.get(workspaceId) ?? 0
          if (running >= MAX_HARDENINGS_PER_WORKSPACE) {
            return tooManyRequests(
              HARDENING_RETRY_SECONDS,
              `This workspace already hardens ${running} jobs; harden this one when one of them is done.`,
              "too_many_hardenings"
            )
          }
          return Effect.sync(() => {
            inFlight.add(key)
            perWorkspace.set(workspaceId, running + 1)
          })
        }),
        () => run,
        () =>
          Effect.sync(() => {
            inFlight.delete(key)
            const left = (perWorkspace.get(workspaceId) ?? 1) - 1
            if (left <= 0) perWorkspace.delete(workspaceId)
            else perWorkspace.set(workspaceId, left)
          })
      )
    }

    const hardenNow = Effect.fn("RedteamPolicies.harden")(function* (workspaceId: string, jobId: string) {
      const job = yield* redteam.findJob(workspaceId, jobId)
      if (job.status === "queued" || job.status === "running") {
        return yield* new Conflict({
          code: "job_not_finished",
          message: `Job ${jobId} is ${job.status}; harden it once it has finished.`
        })
      }
      const agent = job.agent_profile as AgentProfileView
      const agentId = job.agent_id ?? DEMO_AGENT_ID
      const attacks = yield* repo.findingsOf(workspaceId, jobId)
      const landed = attacks.filter((row) => row.landed)
      const cases = new Map(
        attackCases(job.profile as JobProfile, agent, planFor(agent).channels).map((c) => [c.seq, c])
      )
      // Replayed first: in the stricter data handling modes the substrates' values come from these replays.
      const replays = yield* collectReplays(
        job.target,
        agent,
        landed,
        cases,
        { outbound, workspaceId },
        { time: Duration.seconds(config.redteamHardenReplaySeconds), bytes: config.redteamHardenReplayBytes }
      )
      const unanswered = unansweredRejections(landed, replays)
      const unansweredSeqs = new Set(unanswered.flatMap((rejection) => rejection.evidence_seqs))
      const { candidates: groups, unreachable } = synthesize(
        agentId,
        landed.filter((row) => !unansweredSeqs.has(row.seq)),
        (row) => substratesOf(row, replays, cases, agent)
      )
      yield* snapshots.invalidate(workspaceId)
      const snapshot = yield* snapshots.get(workspaceId)
      const runtime = yield* runtimeModes(workspaceId, job.environment_id)
      const without = inMemoryDecider(snapshot, agentId, runtime, [])

      // Verified first, then created together: a limit refusing one candidate leaves none behind.
      const verified = []
      const rejections: Array<(typeof HardeningResult.Type)["rejections"][number]> = [...unanswered]
      for (const group of groups) {
        const evidenceSeqs = group.evidence.map((row) => row.seq)
        const compiled = compileCandidate(group.document)
        if (Either.isLeft(compiled)) {
          rejections.push({
            reason: "invalid_policy",
            message: compiled.left,
            substrate: group.substrate,
            evidence_seqs: evidenceSeqs,
            verify: null
          })
          continue
        }
        const withCandidate = inMemoryDecider(snapshot, agentId, runtime, [compiled.right])
        const checked = yield* verify(group, replays, cases, agent, without, withCandidate)
        if (checked.reason !== null) {
          rejections.push({
            reason: checked.reason,
            message: checked.message,
            substrate: group.substrate,
            evidence_seqs: evidenceSeqs,
            verify: checked.verify
          })
          continue
        }
        verified.push({ group, evidenceSeqs, verify: checked.verify })
      }
      const written = yield* createAll(
        workspaceId,
        verified.map((entry) => entry.group.document)
      )
      const candidates = []
      for (const [index, { evidenceSeqs, group, verify }] of verified.entries()) {
        const { detail, reused } = written[index]!
        // The candidate's id, but a person changed that policy since: what it holds now was never verified.
        if (reused && detail.source_yaml !== group.sourceText) {
          rejections.push({
            reason: "policy_changed",
            message: `Policy ${detail.id} has this candidate's id but was changed since it was created; it is left as it is, and is not the candidate verified.`,
            substrate: group.substrate,
            evidence_seqs: evidenceSeqs,
            verify
          })
          continue
        }
        candidates.push({
          operation: reused ? ("reuse" as const) : ("create" as const),
          existing_policy_id: reused ? detail.id : null,
          source: group.source,
          substrate: group.substrate,
          evidence_seqs: evidenceSeqs,
          policy: detail,
          verify
        })
      }
      const result = { generated_at: new Date().toISOString(), candidates, rejections, unreachable }
      // Kept (the last run per job) so the report page reads it back without replaying.
      yield* repo.saveHardening(workspaceId, jobId, yield* encodeHardening(result))
      return result
    })

    /** `GET /v1/redteam/jobs/{id}/hardening`: the job's last hardening result, 404 before the first. */
    const hardening = Effect.fn("RedteamPolicies.hardening")(function* (workspaceId: string, jobId: string) {
      yield* redteam.findJob(workspaceId, jobId)
      const stored = yield* repo.findHardening(workspaceId, jobId)
      if (Option.isNone(stored)) {
        return yield* new NotFound({
          code: "hardening_not_found",
          message: `Job ${jobId} has not been hardened yet; POST /v1/redteam/jobs/${jobId}/harden first.`
        })
      }
      return yield* decodeHardening(stored.value)
    })

    const harden = (workspaceId: string, jobId: string) => oneAtATime(workspaceId, jobId, hardenNow(workspaceId, jobId))

    return { generateStatic, harden, hardening }
  }),
  dependencies: [OutboundGuard.Default, PolicyLimits.Default]
}) {}
