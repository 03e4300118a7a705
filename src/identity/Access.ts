/**
 * Which credential and role may call which endpoint group: one table, read
 * by the Authentication middleware and rendered in docs/authentication.md.
 * Reads are GET requests; everything else is a write. Roles rank
 * member < admin < owner. Runtime keys act with the rights of a member, and
 * only where `runtimeKey` allows.
 */
import { Forbidden } from "../http/Errors.js"
import type { WorkspaceRole } from "./Authentication.js"

export type RuntimeKeyAccess = "none" | "read" | "all"

export interface GroupAccess {
  readonly runtimeKey: RuntimeKeyAccess
  /** Least role that may read (GET). */
  readonly read: WorkspaceRole
  /** Least role that may write. */
  readonly write: WorkspaceRole
  /** Per-endpoint least role, overriding `read`/`write`. */
  readonly endpoints?: Readonly<Record<string, WorkspaceRole>>
}

const member = { read: "member", write: "member" } as const
const adminWrites = { read: "member", write: "admin" } as const

export const accessByGroup: Readonly<Record<string, GroupAccess>> = {
  me: { runtimeKey: "read", ...member },
  apiKeys: { runtimeKey: "none", read: "admin", write: "admin" },
  team: { runtimeKey: "none", ...member, endpoints: { createInvite: "admin", listMembers: "member" } },
  settings: { runtimeKey: "none", ...adminWrites },
  environments: { runtimeKey: "read", ...adminWrites },
  providerConnections: { runtimeKey: "none", ...adminWrites },
  gatewayRoutes: { runtimeKey: "read", ...adminWrites },
  gatewayProxy: { runtimeKey: "all", ...member },
  mcpServers: { runtimeKey: "read", ...adminWrites },
  mcpProxy: { runtimeKey: "all", ...member },
  llmPricing: { runtimeKey: "read", ...adminWrites },
  llmUsage: { runtimeKey: "read", ...member },
  budgetAlerts: { runtimeKey: "read", ...adminWrites, endpoints: { listBudgetAlertDeliveries: "admin" } },
  agents: { runtimeKey: "read", ...member },
  policies: { runtimeKey: "read", ...member },
  policyImpact: { runtimeKey: "read", ...member },
  labelPolicies: { runtimeKey: "read", ...member },
  toolMetadata: { runtimeKey: "read", ...member },
  policySets: { runtimeKey: "read", ...member },
  knowledgeSources: { runtimeKey: "read", ...member },
  events: { runtimeKey: "all", ...member },
  receipts: { runtimeKey: "read", ...member },
  approvals: { runtimeKey: "read", ...member },
  runs: { runtimeKey: "all", ...member },
  traces: { runtimeKey: "all", ...member },
  reviewEvents: { runtimeKey: "all", ...member },
  reviewQueues: { runtimeKey: "read", ...member },
  analytics: { runtimeKey: "none", ...member },
  redteam: { runtimeKey: "none", ...member },
  redteamReports: { runtimeKey: "none", ...member },
  admin: { runtimeKey: "none", ...member },
  // The audit log shows who changed what: admins and owners only.
  auditEvents: { runtimeKey: "none", read: "admin", write: "owner" }
}

const rank: Record<WorkspaceRole, number> = { member: 0, admin: 1, owner: 2 }

export type AccessVerdict = "allowed" | "runtime_key_not_allowed" | "role_too_low"

export const checkAccess = (
  caller: { readonly kind: "user" | "runtime_key"; readonly role: WorkspaceRole },
  route: { readonly group: string; readonly endpoint: string; readonly method: string }
): AccessVerdict => {
  // Groups absent from the table are closed to runtime keys and need an owner: fail closed.
  const access = accessByGroup[route.group] ?? { runtimeKey: "none", read: "owner", write: "owner" }
  const isRead = route.method === "GET" || route.method === "HEAD"
  if (caller.kind === "runtime_key" && (access.runtimeKey === "none" || (access.runtimeKey === "read" && !isRead))) {
    return "runtime_key_not_allowed"
  }
  const needed = access.endpoints?.[route.endpoint] ?? (isRead ? access.read : access.write)
  return rank[caller.role] >= rank[needed] ? "allowed" : "role_too_low"
}

/** The 403 for a caller whose credential or role may not call the route; undefined when it may. */
export const accessRefusal = (
  caller: { readonly kind: "user" | "runtime_key"; readonly role: WorkspaceRole },
  route: { readonly group: string; readonly endpoint: string; readonly method: string }
): Forbidden | undefined => {
  switch (checkAccess(caller, route)) {
    case "allowed":
      return undefined
    case "runtime_key_not_allowed":
      return new Forbidden({
        code: "forbidden_credential",
        message: "Workspace runtime keys cannot call this endpoint; use a user session."
      })
    case "role_too_low":
      return new Forbidden({
        code: "insufficient_role",
        message: `Your role (${caller.role}) cannot call this endpoint; ask a workspace admin or owner.`
      })
  }
}

/**
 * Webhook URLs often embed a token (Slack, Teams, ...): only a user of role admin or above sees them whole.
 * Members and runtime keys read `maskUrl` of them.
 */
export const seesWebhookUrls = (caller: { readonly kind: "user" | "runtime_key"; readonly role: WorkspaceRole }) =>
  caller.kind === "user" && rank[caller.role] >= rank.admin

/** The URL's scheme, host and port only, e.g. `https://hooks.example.com/***`. */
export const maskUrl = (url: string): string => (URL.canParse(url) ? `${new URL(url).origin}/***` : "***")

/** `url` as `caller` may read it. */
export const webhookUrlFor = (
  caller: { readonly kind: "user" | "runtime_key"; readonly role: WorkspaceRole },
  url: string | null
): string | null => (url === null || seesWebhookUrls(caller) ? url : maskUrl(url))
