/**
 * Human-review analytics, from the aggregates alone (day buckets, all time):
 * reviews by outcome, agent, run kind, policy and workflow step, review
 * reasons, and the decisions (traces, automated interventions, escalations)
 * they relate to. Filters restrict every series that carries the dimension;
 * decisions do not know their run's kind, so with `run_kind` the
 * trace-based figures count nothing.
 */
import { Effect } from "effect"
import { Series, type SeriesSum, interventionOutcomes } from "./Catalog.js"
import { ALL_TIME_END, ALL_TIME_START } from "./Query.js"
import { AnalyticsRepo, type DimensionFilter, NO_VALUE } from "./Repo.js"

/** Reason codes `top_reasons` lists. */
const TOP_REASONS = 10

export interface HumanReviewFilters {
  readonly agent_id?: string | undefined
  readonly policy_id?: string | undefined
  readonly run_kind?: string | undefined
  readonly workflow_step?: string | undefined
}

/**
 * The most groups a list of the report carries (agents, run kinds, policies, workflow steps): those with
 * the most reviews. Workflow steps and agents are whatever run events named, so without it one report
 * could carry millions of rows.
 */
export const MAX_REVIEW_GROUPS = 1_000

const OUTCOMES = ["accepted", "corrected", "false_positive", "ignored", "missed_issue", "rejected"] as const
const isIntervention = (outcome: string) => (interventionOutcomes as ReadonlyArray<string>).includes(outcome)

export class HumanReview extends Effect.Service<HumanReview>()("analytics/HumanReview", {
  effect: Effect.gen(function* () {
    const repo = yield* AnalyticsRepo

    const report = Effect.fn("HumanReview.report")(function* (workspaceId: string, params: HumanReviewFilters) {
      const filters: Array<DimensionFilter> = []
      for (const dimension of ["agent_id", "policy_id", "run_kind", "workflow_step"] as const) {
        const value = params[dimension]
        if (value !== undefined) filters.push({ dimension, values: [value] })
      }
      const segments = [{ granularity: "day" as const, from: ALL_TIME_START, to: ALL_TIME_END }]
      /** Sums grouped by `groupBy`, as [group values, value] pairs. */
      const sums = (
        sum: SeriesSum,
        groupBy: ReadonlyArray<string>,
        only: ReadonlyArray<DimensionFilter> = [],
        largest?: number
      ) =>
        Effect.map(
          repo.sums({
            workspaceId,
            sum,
            filters: [...filters, ...only],
            segments,
            groupBy,
            bucketed: false,
            ...(largest === undefined ? {} : { largestFirst: true, maxCells: largest })
          }),
          (rows) => rows.map((row) => [row.grp, Number(row.value)] as const)
        )
      /** The lists cut to MAX_REVIEW_GROUPS. */
      const truncated: Array<string> = []
      /** The values of `dimension` with the most `sum`, at most MAX_REVIEW_GROUPS (`list` noted when cut). */
      const largest = (sum: SeriesSum, dimension: string, list: string) =>
        Effect.map(
          repo.sums({
            workspaceId,
            sum,
            filters,
            segments,
            groupBy: [dimension],
            bucketed: false,
            largestFirst: true,
            maxCells: MAX_REVIEW_GROUPS + 2
          }),
          (rows) => {
            const values = rows.flatMap((row) => row.grp).filter((value) => value !== NO_VALUE)
            if (values.length <= MAX_REVIEW_GROUPS) return undefined
            truncated.push(list)
            return values.slice(0, MAX_REVIEW_GROUPS)
          }
        )
      const total = (pairs: ReadonlyArray<readonly [ReadonlyArray<string>, number]>) =>
        pairs.reduce((sum, [, value]) => sum + value, 0)

      /** Reviews by `dimension` and outcome, for the MAX_REVIEW_GROUPS values with the most reviews. */
      const reviewsBy = (dimension: string, list: string) =>
        Effect.flatMap(largest({ series: Series.reviews }, dimension, list), (kept) =>
          sums(
            { series: Series.reviews },
            [dimension, "outcome"],
            kept === undefined ? [] : [{ dimension, values: kept }]
          )
        )
      const byOutcome = yield* sums({ series: Series.reviews }, ["outcome"])
      const traceCount = total(yield* sums({ series: Series.decisions }, []))
      const automated = total(
        yield* sums({ series: Series.decisions, where: { effect: ["deny", "defer", "rewrite"] } }, [])
      )
      const outcomeCount = (outcome: string) => total(byOutcome.filter(([[group]]) => group === outcome))
      const reviewCount = total(byOutcome)
      const interventionCount = total(byOutcome.filter(([[group]]) => isIntervention(group!)))

      /** Per value of the first grouping dimension: counts by outcome. */
      const tally = (pairs: ReadonlyArray<readonly [ReadonlyArray<string>, number]>) => {
        const groups = new Map<string, Map<string, number>>()
        for (const [[group, outcome], value] of pairs) {
          if (group === undefined || group === NO_VALUE) continue
          const counts = groups.get(group) ?? new Map<string, number>()
          counts.set(outcome!, (counts.get(outcome!) ?? 0) + value)
          groups.set(group, counts)
        }
        return groups
      }
      const countsOf = (counts: Map<string, number>) => ({
        all: [...counts.values()].reduce((a, b) => a + b, 0),
        interventions: [...counts].filter(([outcome]) => isIntervention(outcome)).reduce((a, [, n]) => a + n, 0),
        of: (outcome: string) => counts.get(outcome) ?? 0
      })
      const grouped = (groups: Map<string, Map<string, number>>) =>
        [...groups]
          .map(([group, counts]) => ({
            group,
            human_intervention_count: countsOf(counts).interventions,
            human_review_count: countsOf(counts).all
          }))
          .sort((a, b) => b.human_review_count - a.human_review_count || a.group.localeCompare(b.group))

      const policyReviews = tally(yield* reviewsBy("policy_id", "by_policy"))
      const escalated = yield* largest({ series: Series.escalations }, "policy_id", "by_policy")
      const escalations = new Map<string, number>()
      const escalationFilter = escalated === undefined ? [] : [{ dimension: "policy_id", values: escalated }]
      for (const [[policy], value] of yield* sums({ series: Series.escalations }, ["policy_id"], escalationFilter)) {
        if (policy !== undefined && policy !== NO_VALUE) escalations.set(policy, value)
      }
      let policies = [...new Set([...policyReviews.keys(), ...escalations.keys()])]
      if (policies.length > MAX_REVIEW_GROUPS) {
        // Those with the most reviews (then escalations) stay, as in the other lists.
        const reviews = (policy: string) => countsOf(policyReviews.get(policy) ?? new Map()).all
        const ranked = policies.sort(
          (a, b) => reviews(b) - reviews(a) || (escalations.get(b) ?? 0) - (escalations.get(a) ?? 0)
        )
        truncated.push("by_policy")
        policies = ranked.slice(0, MAX_REVIEW_GROUPS)
      }
      policies.sort()
      const steps = tally(yield* reviewsBy("workflow_step", "by_workflow_step"))
      const byAgent = grouped(tally(yield* reviewsBy("agent_id", "by_agent")))
      const byRunKind = grouped(tally(yield* reviewsBy("run_kind", "by_run_kind")))

      return {
        summary: {
          trace_count: traceCount,
          automated_intervention_count: automated,
          human_intervention_count: interventionCount,
          human_review_count: reviewCount,
          false_positive_rate: reviewCount === 0 ? 0 : outcomeCount("false_positive") / reviewCount,
          human_intervention_rate: traceCount === 0 ? 0 : interventionCount / traceCount
        },
        outcomes: {
          accepted_count: outcomeCount(OUTCOMES[0]),
          corrected_count: outcomeCount(OUTCOMES[1]),
          false_positive_count: outcomeCount(OUTCOMES[2]),
          ignored_count: outcomeCount(OUTCOMES[3]),
          missed_issue_count: outcomeCount(OUTCOMES[4]),
          rejected_count: outcomeCount(OUTCOMES[5])
        },
        by_agent: byAgent,
        by_run_kind: byRunKind,
        by_policy: policies.map((policy_id) => {
          const counts = countsOf(policyReviews.get(policy_id) ?? new Map())
          return {
            policy_id,
            corrected_count: counts.of("corrected"),
            escalation_count: escalations.get(policy_id) ?? 0,
            false_positive_count: counts.of("false_positive")
          }
        }),
        by_workflow_step: [...steps]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([workflow_step, counts]) => {
            const c = countsOf(counts)
            return {
              workflow_step,
              corrected_count: c.of("corrected"),
              false_positive_count: c.of("false_positive"),
              human_review_count: c.all,
              rejected_count: c.of("rejected")
            }
          }),
        // Only the largest come back (one more for reviews without a reason): a workspace may use any number of
        // reason codes, and all of them were read to keep ten.
        top_reasons: (yield* sums({ series: Series.reviewReasons }, ["reason_code"], [], TOP_REASONS + 1))
          .filter(([[reason]]) => reason !== undefined && reason !== NO_VALUE)
          .map(([[reason_code], count]) => ({ reason_code: reason_code!, count }))
          .sort((a, b) => b.count - a.count || a.reason_code.localeCompare(b.reason_code))
          .slice(0, TOP_REASONS),
        truncated_lists: [...new Set(truncated)].sort()
      }
    })

    return { report }
  }),
  dependencies: [AnalyticsRepo.Default]
}) {}
