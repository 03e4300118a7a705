/**
 * Per-workspace limits on stored policies (docs/policies.md#workspace-limits):
 * - MAX_POLICIES_PER_WORKSPACE policies;
 * - MAX_REGEX_PATTERNS_PER_WORKSPACE distinct RE2 patterns (regexes and `any_of` lists, each with its
 *   case sensitivity), kept well below the process-wide compiled-pattern cache (UserRegex.ts), so one
 *   workspace cannot evict every other workspace's patterns and make them all recompile.
 *
 * Both count every stored policy, enabled or not: what is stored may be compiled (snapshot, tests,
 * impact, red-team replay), and enabling or disabling never meets a limit. Every write that adds or
 * changes policies runs through `write`: under a per-workspace transaction lock (so two concurrent
 * writes cannot both slip past a limit) it counts before and after the write and rolls back a write
 * that leaves a count above its limit and higher than before (so a workspace already over a lowered
 * limit can still edit and delete). Enabling and disabling take the same lock (`locked`): every write
 * that reads a policy to decide (the impact gate) sees the last committed write's result.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Conflict } from "../http/Errors.js"
import { AppConfig } from "../platform/Config.js"
import { lockKey } from "../platform/Sql.js"
import { ConfigChanges } from "./ConfigChanges.js"
import { collectPatterns } from "./CompileBudget.js"

interface Usage {
  readonly policies: number
  readonly patterns: number
}

const usageOf = (matches: ReadonlyArray<unknown>): Usage => {
  const patterns = new Map<string, string>()
  for (const match of matches) collectPatterns(match, patterns)
  return { policies: matches.length, patterns: patterns.size }
}

export class PolicyLimits extends Effect.Service<PolicyLimits>()("catalog/PolicyLimits", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const changes = yield* ConfigChanges
    const maxPolicies = config.maxPoliciesPerWorkspace
    const maxPatterns = config.maxRegexPatternsPerWorkspace

    const refusal = (before: Usage, after: Usage): Conflict | undefined => {
      if (after.policies > maxPolicies && after.policies > before.policies) {
        return new Conflict({
          code: "policy_limit_reached",
          message: `This workspace may store at most ${maxPolicies} policies (MAX_POLICIES_PER_WORKSPACE) and holds ${before.policies}; delete policies it no longer needs, or ask the operator to raise the limit.`
        })
      }
      if (after.patterns > maxPatterns && after.patterns > before.patterns) {
        return new Conflict({
          code: "regex_limit_reached",
          message: `This workspace's policies may use at most ${maxPatterns} distinct regex patterns (MAX_REGEX_PATTERNS_PER_WORKSPACE: regex values and any_of lists, each with its case sensitivity) and use ${before.patterns}; reuse a pattern a policy already has, or delete or change a policy that uses one.`
        })
      }
      return undefined
    }

    /**
     * Refuses (409, before any work) a write of `count` distinct policies at once (a generation) that could never
     * fit: building and writing them all only for the limit to roll them back held the API thread and, in one
     * transaction, the workspace's policy lock for as long.
     */
    const admit = (count: number) =>
      count <= maxPolicies
        ? Effect.void
        : Effect.fail(
            new Conflict({
              code: "policy_limit_reached",
              message: `This profile would generate ${count.toLocaleString("en-US")} policies; a workspace may store at most ${maxPolicies} (MAX_POLICIES_PER_WORKSPACE). Shorten its lists, or ask the operator to raise the limit.`
            })
          )

    /** The stored policies' count and distinct patterns (a database failure is a defect, as in Repo.ts). */
    const usage = (workspaceId: string) =>
      sql<{ readonly match: unknown }>`select document->'match' as match from policies
          where workspace_id = ${workspaceId}`.pipe(
        Effect.map((rows) => usageOf(rows.map((row) => row.match))),
        Effect.orDie
      )

    /** Runs a write of the workspace's policies as a config change, refused (409, rolled back) past a limit. */
    const write = <A, E, R>(workspaceId: string, write: Effect.Effect<A, E, R>) =>
      changes.change(
        workspaceId,
        "policies",
        Effect.gen(function* () {
          yield* Effect.orDie(lockKey(sql, `policies:${workspaceId}`))
          const before = yield* usage(workspaceId)
          const result = yield* write
          const refused = refusal(before, yield* usage(workspaceId))
          if (refused !== undefined) return yield* refused
          return result
        })
      )

    /**
     * Runs a write that cannot raise a limit (enabling, disabling) as a config change under the same lock,
     * so it decides on the policies as they are when it commits, not as a concurrent write left them.
     */
    const locked = <A, E, R>(workspaceId: string, write: Effect.Effect<A, E, R>) =>
      changes.change(
        workspaceId,
        "policies",
        Effect.zipRight(Effect.orDie(lockKey(sql, `policies:${workspaceId}`)), write)
      )

    return { write, locked, admit }
  })
}) {}
