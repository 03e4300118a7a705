/**
 * `GET /v1/policy-sets/{digest}`: a stored set, each version it names
 * expanded from its history (policy_versions, catalog_versions), which
 * outlives every later change and delete: a receipt stays explainable.
 */
import { Effect, Option } from "effect"
import {
  AgentVersion,
  LabelPolicyVersion,
  toPolicyVersion,
  ToolMetadataVersion,
  withCanaries
} from "../catalog/Lifecycle.js"
import { type CatalogVersionRow, CatalogVersions, toVersionEntry, type VersionRef } from "../catalog/CatalogVersions.js"
import { CatalogRepo } from "../catalog/Repo.js"
import { NotFound } from "../http/Errors.js"
import type { PolicySet, PolicySetContent } from "./Domain.js"
import { PolicySetRepo } from "./Repo.js"

/** A version's own content, without its header. */
type Content<T> = Omit<T, "version" | "created_at" | "created_by">

const policySetNotFound = (digest: string) =>
  new NotFound({ code: "policy_set_not_found", message: `No policy set ${digest} in this workspace.` })

const refKey = (resource: string, key: string, version: number) => `${resource}\u0000${key}\u0000${version}`

/** Every catalog version a set names. */
const catalogRefs = (content: PolicySetContent): ReadonlyArray<VersionRef> => [
  ...(content.agent === null
    ? []
    : [{ resource: "agent" as const, key: content.agent.agent_id, version: content.agent.version }]),
  ...content.tool_metadata.map((tool) => ({
    resource: "tool_metadata" as const,
    key: tool.tool,
    version: tool.version
  })),
  ...content.label_policies.map((label) => ({
    resource: "label_policy" as const,
    key: label.origin,
    version: label.version
  }))
]

export class PolicySets extends Effect.Service<PolicySets>()("policysets/PolicySets", {
  effect: Effect.gen(function* () {
    const repo = yield* PolicySetRepo
    const catalog = yield* CatalogRepo
    const history = yield* CatalogVersions

    const get = Effect.fn("PolicySets.get")(function* (workspaceId: string, digest: string) {
      const found = yield* repo.find(workspaceId, digest)
      if (Option.isNone(found)) return yield* policySetNotFound(digest)
      const { content, created_at } = found.value
      const stored = content.policies.flatMap((policy) =>
        policy.version === null ? [] : [{ id: policy.id, version: policy.version }]
      )
      const [policyRows, catalogRows] = yield* Effect.all([
        stored.length === 0 ? Effect.succeed([]) : catalog.findPolicyVersions(workspaceId, stored),
        history.find(workspaceId, catalogRefs(content))
      ])
      const policies = new Map(policyRows.map((row) => [`${row.policy_id}\u0000${row.version}`, row]))
      const versions = new Map<string, CatalogVersionRow>(
        catalogRows.map((row) => [refKey(row.resource, row.key, row.version), row])
      )
      const entry = (resource: string, key: string, version: number) =>
        Option.fromNullable(versions.get(refKey(resource, key, version)))
      // Histories are never pruned apart from their workspace, so every version named is found.
      const set: PolicySet = {
        digest,
        created_at: created_at.toISOString(),
        detectors_version: content.detectors_version,
        default_action: content.default_action,
        checker_modes: content.checker_modes,
        policies: stored.flatMap(({ id, version }) => {
          const row = policies.get(`${id}\u0000${version}`)
          // Each decided, so each was on: its version records the switch as it was when written (a later enable
          // records no version).
          return row === undefined ? [] : [{ id, ...toPolicyVersion(row), enabled: true, document: row.document }]
        }),
        agent:
          content.agent === null
            ? null
            : Option.getOrNull(
                Option.map(entry("agent", content.agent.agent_id, content.agent.version), (row) => {
                  const version = toVersionEntry<Content<typeof AgentVersion.Type>>(row)
                  return { agent_id: row.key, ...version, profile: withCanaries(version.profile) }
                })
              ),
        tool_metadata: content.tool_metadata.flatMap(({ tool, version }) =>
          Option.toArray(
            Option.map(entry("tool_metadata", tool, version), (row) => ({
              tool,
              ...toVersionEntry<Content<typeof ToolMetadataVersion.Type>>(row)
            }))
          )
        ),
        label_policies: content.label_policies.flatMap(({ origin, version }) =>
          Option.toArray(
            Option.map(entry("label_policy", origin, version), (row) => ({
              origin,
              ...toVersionEntry<Content<typeof LabelPolicyVersion.Type>>(row)
            }))
          )
        )
      }
      return set
    })

    return { get }
  }),
  dependencies: [PolicySetRepo.Default, CatalogVersions.Default]
}) {}
