/**
 * Reports of a job: aggregates, findings, the risk level and the comparison
 * with another job of the same agent; and the HTML rendering of a shared report.
 *
 * Risk: each landed finding weighs low 1, medium 3, high 7, critical 10;
 * `risk_points` is the sum, and `risk_score` = 10 × (1 − e^(−points / 15))
 * rounded to one decimal: 0 with nothing landed, rising fast for the first
 * findings and never above 10 however many land. `risk_level` is `none` with
 * nothing landed, else `critical` when a critical finding landed or the
 * points reach 40, `high` when a high one landed or the points reach 20,
 * `medium` when a medium one landed or the points reach 5, `low` otherwise.
 */
import type { Severity } from "../authorization/Pipeline.js"
import { toTimestamp } from "../platform/Schemas.js"
import { AttackRecord, Job, JobId } from "./Domain.js"
import type { AttackOfJobRow, FindingRow, JobRow, SessionRow } from "./Repo.js"

export const SEVERITY_WEIGHT: Readonly<Record<Severity, number>> = { low: 1, medium: 3, high: 7, critical: 10 }

export type RiskLevel = "none" | "low" | "medium" | "high" | "critical"

/** Points at which the score reaches 1 − 1/e of its range (about 6.3). */
export const RISK_SCALE_POINTS = 15

/** The 0-10 score of a sum of severity weights (formula above; docs/redteam.md). */
export const riskScoreOf = (points: number) => Math.round(100 * (1 - Math.exp(-points / RISK_SCALE_POINTS))) / 10

export const riskOf = (
  landed: ReadonlyArray<{ readonly severity: string }>
): { points: number; score: number; level: RiskLevel } => {
  const severities = landed.map((finding) => finding.severity as Severity)
  const points = severities.reduce((sum, severity) => sum + (SEVERITY_WEIGHT[severity] ?? 0), 0)
  const has = (severity: Severity) => severities.includes(severity)
  const level: RiskLevel =
    landed.length === 0
      ? "none"
      : has("critical") || points >= 40
        ? "critical"
        : has("high") || points >= 20
          ? "high"
          : has("medium") || points >= 5
            ? "medium"
            : "low"
  return { points, score: riskScoreOf(points), level }
}

/**
 * The target as a shared report shows it: the origin, with "/…" for a path or query, which may carry a
 * token (`?api_key=`, a webhook's secret path). Members see the whole URL on the job itself.
 */
export const publicTarget = (target: string): string => {
  if (!URL.canParse(target)) return "[target]"
  const url = new URL(target)
  if (url.origin === "null") return `${url.protocol}//${url.host}`
  return url.pathname === "/" && url.search === "" && url.hash === "" ? url.origin : `${url.origin}/…`
}

export const toJob = (row: JobRow) =>
  new Job({
    id: JobId.make(row.id),
    agent_id: row.agent_id,
    workspace_id: row.workspace_id,
    environment_id: row.environment_id,
    profile: row.profile as Job["profile"],
    target: row.target,
    status: row.status as Job["status"],
    attacks: row.attacks,
    blocked: row.blocked,
    landed: row.landed,
    error: row.error,
    created_at: toTimestamp(row.created_at),
    updated_at: toTimestamp(row.updated_at)
  })

export const toAttackRecord = (row: AttackOfJobRow) =>
  new AttackRecord({
    job_id: JobId.make(row.job_id),
    seq: row.seq,
    attack: row.attack,
    goal: row.goal,
    profile: row.profile as AttackRecord["profile"],
    target: row.target,
    prompt: row.prompt,
    reply: row.reply,
    outcome: row.outcome as AttackRecord["outcome"],
    landed: row.landed,
    category: row.category,
    severity: row.severity as Severity,
    evidence: row.evidence,
    error: row.error,
    trace_id: row.trace_id,
    created_at: toTimestamp(row.created_at)
  })

export const toSession = (row: SessionRow) => ({
  session_id: row.session_id,
  runner_session_id: null,
  case_id: row.case_id,
  seq: row.seq,
  trial_index: row.trial_index,
  attack: row.attack,
  goal: row.goal,
  kind: row.kind,
  track: row.technique,
  status: row.outcome === "error" ? "error" : "completed",
  outcome: row.outcome,
  landed: row.landed,
  trace_id: row.trace_id,
  error: row.error,
  events: (row.events ?? []) as ReadonlyArray<{
    event_id: string
    seq: number
    actor: string
    kind: string
    label: string
    content_text: string
    trace_id: string | null
    payload: unknown
    created_at: string
  }>
})

const findingRef = (row: FindingRow) => ({
  attack: row.attack,
  category: row.category,
  severity: row.severity as Severity
})

export const comparisonOf = (
  compareJobId: string,
  now: ReadonlyArray<FindingRow>,
  before: ReadonlyArray<FindingRow>
) => {
  const landedNow = new Map(now.filter((row) => row.landed).map((row) => [row.attack, row]))
  const landedBefore = new Map(before.filter((row) => row.landed).map((row) => [row.attack, row]))
  return {
    compare_job_id: compareJobId,
    landed_before: landedBefore.size,
    landed_now: landedNow.size,
    new: [...landedNow.values()].filter((row) => !landedBefore.has(row.attack)).map(findingRef),
    fixed: [...landedBefore.values()].filter((row) => !landedNow.has(row.attack)).map(findingRef),
    persisting: [...landedNow.values()].filter((row) => landedBefore.has(row.attack)).map(findingRef)
  }
}

export const buildReport = (job: JobRow, attacks: ReadonlyArray<FindingRow>, comparison: unknown) => {
  const count = (outcome: string) => attacks.filter((row) => row.outcome === outcome).length
  const landed = count("landed")
  const blocked = count("blocked")
  const clean = count("clean")
  const errored = count("error")
  const total = landed + blocked + clean + errored
  const decided = landed + blocked + clean
  const landedRows = attacks.filter((row) => row.landed)
  const risk = riskOf(landedRows)
  const ratio = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 10_000)
  return {
    job: toJob(job),
    generated_at: new Date().toISOString(),
    aggregates: {
      total,
      attacks: total,
      landed,
      blocked,
      clean,
      errored,
      success_rate: ratio(landed, decided),
      success_rate_all: ratio(landed, total),
      risk_score: risk.score,
      risk_points: risk.points,
      risk_level: risk.level
    },
    findings: attacks
      .filter((row) => row.outcome === "landed" || row.outcome === "blocked")
      .map((row) => ({
        seq: row.seq,
        attack: row.attack,
        category: row.category,
        goal: row.goal,
        prompt: row.prompt,
        evidence: row.evidence,
        outcome: row.outcome as "landed" | "blocked",
        landed: row.landed,
        severity: row.severity as Severity,
        trace_id: row.trace_id
      })),
    comparison
  }
}

export type ReportBody = ReturnType<typeof buildReport>
