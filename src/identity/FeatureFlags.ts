/**
 * Workspace feature flags (`workspaces.is_*_enabled`, all true by default)
 * and the endpoint groups each one closes: the Authentication middleware
 * answers 403 `feature_disabled` for a gated group of a workspace whose flag
 * is off. Platform admins (PLATFORM_ADMIN_USER_IDS) set them.
 */
import { Effect, Option } from "effect"
import { auditedWrites } from "../audit/Chain.js"
import { makeNoticeCache } from "../platform/ChangeNotices.js"
import { Forbidden, NotFound } from "../http/Errors.js"
import { IdentityRepo } from "./Repo.js"

export type FeatureFlag = "is_attacks_enabled" | "is_knowledge_base_enabled" | "is_mcp_gateway_enabled"

/** HttpApi group -> the flag that must be on for the workspace to call it. */
export const featureOfGroup: Readonly<Record<string, FeatureFlag>> = {
  redteam: "is_attacks_enabled",
  redteamReports: "is_attacks_enabled",
  knowledgeSources: "is_knowledge_base_enabled",
  providerConnections: "is_mcp_gateway_enabled",
  gatewayRoutes: "is_mcp_gateway_enabled",
  gatewayProxy: "is_mcp_gateway_enabled",
  mcpServers: "is_mcp_gateway_enabled",
  mcpProxy: "is_mcp_gateway_enabled"
}

const NOTICE_TOPIC = "feature_flags"

export type FeatureFlags = Readonly<Record<FeatureFlag, boolean>>

const featureNames: Record<FeatureFlag, string> = {
  is_attacks_enabled: "Red-team attacks",
  is_knowledge_base_enabled: "Knowledge sources",
  is_mcp_gateway_enabled: "The LLM/MCP gateway"
}

/** The 403 `feature_disabled` when `group` is gated by a flag that is off in `flags`; undefined when open. */
export const groupClosed = (flags: Option.Option<FeatureFlags>, group: string): Forbidden | undefined => {
  const flag = featureOfGroup[group]
  if (flag === undefined || Option.isNone(flags) || flags.value[flag]) return undefined
  return new Forbidden({
    code: "feature_disabled",
    message: `${featureNames[flag]} are not enabled for this workspace (${flag} is false).`,
    details: [{ path: flag, message: "disabled by a platform admin" }]
  })
}

export class WorkspaceFeatures extends Effect.Service<WorkspaceFeatures>()("identity/WorkspaceFeatures", {
  scoped: Effect.gen(function* () {
    const repo = yield* IdentityRepo
    // Read on every gateway call: cached until a change notice (any instance's PATCH) drops the entry.
    const cache = yield* makeNoticeCache<Option.Option<FeatureFlags>>(NOTICE_TOPIC)
    const audited = yield* auditedWrites

    const notFound = (id: string) =>
      new NotFound({ code: "workspace_not_found", message: `Workspace ${id} does not exist.` })

    const flagsOf = Effect.fn("WorkspaceFeatures.flagsOf")((workspaceId: string) =>
      Effect.flatMap(repo.findFeatureFlags(workspaceId), (found) =>
        Option.match(found, {
          onNone: () => Effect.fail(notFound(workspaceId)),
          onSome: (flags) => Effect.succeed({ workspace_id: workspaceId, ...flags })
        })
      )
    )

    const setFlags = Effect.fn("WorkspaceFeatures.setFlags")(function* (
      workspaceId: string,
      patch: { readonly [K in FeatureFlag]?: boolean | undefined }
    ) {
      const values = Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined))
      if (Object.keys(values).length === 0) return yield* flagsOf(workspaceId)
      // In the audit chain; dropped only once committed: before, a call in between would cache the old flags again.
      const updated = yield* audited(repo.updateFeatureFlags(workspaceId, values))
      yield* cache.changed(workspaceId)
      if (Option.isNone(updated)) return yield* notFound(workspaceId)
      return { workspace_id: workspaceId, ...updated.value }
    })

    /** The workspace's flags (cached until a change notice); none for a workspace that does not exist. */
    const flags = (workspaceId: string) => cache.get(workspaceId, repo.findFeatureFlags(workspaceId))

    /** `flags` from the cache alone: undefined when not cached. */
    const cachedFlags = (workspaceId: string) => cache.peek(workspaceId)

    return { flagsOf, setFlags, flags, cachedFlags }
  }),
  dependencies: [IdentityRepo.Default]
}) {}
