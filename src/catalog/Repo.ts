/** SQL of the catalog. Every query takes the workspace id. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

export interface AgentRow {
  readonly agent_id: string
  readonly profile: unknown
  readonly source_text: string
}

export interface PolicyRow {
  readonly id: string
  readonly description: string
  readonly family: string
  readonly severity: string
  readonly action: string
  readonly enabled: boolean
  readonly owner_agent_id: string | null
  readonly source_yaml: string
  readonly document: unknown
  readonly origin: string | null
  readonly invalid_reason: string | null
}

export interface LabelPolicyRow {
  readonly origin: string
  readonly enabled: boolean
  readonly confidentiality: unknown
  readonly integrity: unknown
  readonly trust: unknown
}

export interface ToolMetadataRow {
  readonly tool: string
  readonly enabled: boolean
  readonly metadata: unknown
}

export interface KnowledgeSourceRow {
  readonly id: string
  readonly kind: string
  readonly title: string
  readonly location: string | null
  readonly status: string
  readonly metadata: unknown
  readonly file_name: string | null
  readonly media_type: string | null
  readonly byte_size: number | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly last_indexed_at: Date | null
}

export interface NewPolicy {
  readonly id: string
  readonly description: string
  readonly family: string
  readonly severity: string
  readonly action: string
  readonly enabled: boolean
  readonly ownerAgentId: string | null
  readonly sourceYaml: string
  readonly document: unknown
  readonly origin: string | null
}

const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])
const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value))

export class CatalogRepo extends Effect.Service<CatalogRepo>()("catalog/CatalogRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const policyColumns = sql`id, description, family, severity, action, enabled, owner_agent_id, source_yaml, document, origin, invalid_reason`
    const sourceColumns = sql`id, kind, title, location, status, metadata, file_name, media_type, byte_size,
                              created_at, updated_at, last_indexed_at`

    return dieOnErrors({
      // ---- agents
      /** Answers false when the agent id is taken in this workspace. */
      insertAgent: (
        workspaceId: string,
        agent: { agentId: string; displayName: string; profile: unknown; sourceText: string }
      ) =>
        sql`insert into agents (workspace_id, agent_id, display_name, profile, source_text)
            values (${workspaceId}, ${agent.agentId}, ${agent.displayName}, ${json(agent.profile)}, ${agent.sourceText})
            on conflict do nothing returning agent_id`.pipe(Effect.map((rows) => rows.length === 1)),
      replaceAgent: (
        workspaceId: string,
        agent: { agentId: string; displayName: string; profile: unknown; sourceText: string }
      ) =>
        sql`update agents set display_name = ${agent.displayName}, profile = ${json(agent.profile)},
            source_text = ${agent.sourceText}, updated_at = now()
            where workspace_id = ${workspaceId} and agent_id = ${agent.agentId} returning agent_id`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),
      listAgents: (workspaceId: string) =>
        sql<AgentRow>`select agent_id, profile, source_text from agents where workspace_id = ${workspaceId}
                      order by created_at desc, agent_id`,
      findAgent: (workspaceId: string, agentId: string) =>
        sql<AgentRow>`select agent_id, profile, source_text from agents
                      where workspace_id = ${workspaceId} and agent_id = ${agentId}`.pipe(Effect.map(first)),
      deleteAgent: (workspaceId: string, agentId: string) =>
        sql`delete from agents where workspace_id = ${workspaceId} and agent_id = ${agentId} returning agent_id`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),

      // ---- policies
      /** Answers false when the policy id is taken in this workspace. */
      insertPolicy: (workspaceId: string, policy: NewPolicy) =>
        sql`insert into policies (workspace_id, id, description, family, severity, action, enabled, owner_agent_id,
                                  source_yaml, document, origin)
            values (${workspaceId}, ${policy.id}, ${policy.description}, ${policy.family}, ${policy.severity},
                    ${policy.action}, ${policy.enabled}, ${policy.ownerAgentId}, ${policy.sourceYaml},
                    ${json(policy.document)}, ${policy.origin})
            on conflict do nothing returning id`.pipe(Effect.map((rows) => rows.length === 1)),
      /** Replaces a generated policy's document, keeping whether it is enabled; `None` when an authored policy holds the id. */
      upsertGeneratedPolicy: (workspaceId: string, policy: NewPolicy) =>
        sql<PolicyRow>`insert into policies (workspace_id, id, description, family, severity, action, enabled,
                                  owner_agent_id, source_yaml, document, origin)
            values (${workspaceId}, ${policy.id}, ${policy.description}, ${policy.family}, ${policy.severity},
                    ${policy.action}, false, ${policy.ownerAgentId}, ${policy.sourceYaml}, ${json(policy.document)},
                    ${policy.origin})
            on conflict (workspace_id, id) do update set description = excluded.description, family = excluded.family,
              severity = excluded.severity, action = excluded.action, owner_agent_id = excluded.owner_agent_id,
              source_yaml = excluded.source_yaml, document = excluded.document, invalid_reason = null, updated_at = now()
            where policies.origin = 'agent_profile'
            returning ${policyColumns}`.pipe(Effect.map(first)),
      listPolicies: (workspaceId: string, filter: { ownerAgentId?: string; enabledOnly?: boolean } = {}) =>
        sql<PolicyRow>`select ${policyColumns} from policies where workspace_id = ${workspaceId}
                       ${filter.ownerAgentId === undefined ? sql`` : sql`and owner_agent_id = ${filter.ownerAgentId}`}
                       ${filter.enabledOnly === true ? sql`and enabled` : sql``}
                       order by created_at desc, id`,
      findPolicies: (workspaceId: string, ids: ReadonlyArray<string>) =>
        sql<PolicyRow>`select ${policyColumns} from policies where workspace_id = ${workspaceId} and id in ${sql.in(ids)}`,
      setEnabled: (workspaceId: string, ids: ReadonlyArray<string>, enabled: boolean) =>
        sql`update policies set enabled = ${enabled}, updated_at = now()
            where workspace_id = ${workspaceId} and id in ${sql.in(ids)}`,
      /** Disables a policy whose document no longer compiles, recording why. */
      flagInvalidPolicy: (workspaceId: string, id: string, reason: string) =>
        sql`update policies set enabled = false, invalid_reason = ${reason}, updated_at = now()
            where workspace_id = ${workspaceId} and id = ${id}`,
      deletePolicy: (workspaceId: string, id: string) =>
        sql`delete from policies where workspace_id = ${workspaceId} and id = ${id} returning id`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),
      disableOwnedPolicies: (workspaceId: string, agentId: string) =>
        sql`update policies set enabled = false, updated_at = now()
            where workspace_id = ${workspaceId} and owner_agent_id = ${agentId}`,

      // ---- label policies
      upsertLabelPolicy: (workspaceId: string, row: LabelPolicyRow) =>
        sql<LabelPolicyRow>`insert into label_policies (workspace_id, origin, enabled, confidentiality, integrity, trust)
            values (${workspaceId}, ${row.origin}, ${row.enabled}, ${json(row.confidentiality)}, ${json(row.integrity)},
                    ${json(row.trust)})
            on conflict (workspace_id, origin) do update set enabled = excluded.enabled,
              confidentiality = excluded.confidentiality, integrity = excluded.integrity, trust = excluded.trust,
              updated_at = now()
            returning origin, enabled, confidentiality, integrity, trust`.pipe(Effect.map((rows) => rows[0]!)),
      listLabelPolicies: (workspaceId: string) =>
        sql<LabelPolicyRow>`select origin, enabled, confidentiality, integrity, trust from label_policies
                            where workspace_id = ${workspaceId} order by origin`,
      findLabelPolicy: (workspaceId: string, origin: string) =>
        sql<LabelPolicyRow>`select origin, enabled, confidentiality, integrity, trust from label_policies
                            where workspace_id = ${workspaceId} and origin = ${origin}`.pipe(Effect.map(first)),
      deleteLabelPolicy: (workspaceId: string, origin: string) =>
        sql`delete from label_policies where workspace_id = ${workspaceId} and origin = ${origin} returning origin`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),

      // ---- tool metadata
      upsertToolMetadata: (workspaceId: string, row: ToolMetadataRow) =>
        sql<ToolMetadataRow>`insert into tool_metadata (workspace_id, tool, enabled, metadata)
            values (${workspaceId}, ${row.tool}, ${row.enabled}, ${json(row.metadata)})
            on conflict (workspace_id, tool) do update set enabled = excluded.enabled, metadata = excluded.metadata,
              updated_at = now()
            returning tool, enabled, metadata`.pipe(Effect.map((rows) => rows[0]!)),
      listToolMetadata: (workspaceId: string) =>
        sql<ToolMetadataRow>`select tool, enabled, metadata from tool_metadata where workspace_id = ${workspaceId}
                             order by tool`,
      findToolMetadata: (workspaceId: string, tool: string) =>
        sql<ToolMetadataRow>`select tool, enabled, metadata from tool_metadata
                             where workspace_id = ${workspaceId} and tool = ${tool}`.pipe(Effect.map(first)),
      deleteToolMetadata: (workspaceId: string, tool: string) =>
        sql`delete from tool_metadata where workspace_id = ${workspaceId} and tool = ${tool} returning tool`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),

      // ---- knowledge sources
      insertKnowledgeSource: (
        workspaceId: string,
        source: {
          id: string
          kind: string
          title: string
          location: string | null
          metadata: unknown
          file: { name: string; mediaType: string; data: Buffer } | null
        }
      ) =>
        sql<KnowledgeSourceRow>`insert into knowledge_sources (id, workspace_id, kind, title, location, metadata,
                                  file_name, media_type, byte_size, data)
            values (${source.id}, ${workspaceId}, ${source.kind}, ${source.title}, ${source.location},
                    ${json(source.metadata ?? {})}, ${source.file?.name ?? null}, ${source.file?.mediaType ?? null},
                    ${source.file?.data.length ?? null}, ${source.file?.data ?? null})
            returning ${sourceColumns}`.pipe(Effect.map((rows) => rows[0]!)),
      listKnowledgeSources: (workspaceId: string) =>
        sql<KnowledgeSourceRow>`select ${sourceColumns} from knowledge_sources where workspace_id = ${workspaceId}
                                order by created_at desc, id desc`,
      findKnowledgeSourceFile: (workspaceId: string, id: string) =>
        sql<{ file_name: string | null; media_type: string | null; byte_size: number | null; data: Buffer | null }>`
          select file_name, media_type, byte_size, data from knowledge_sources
          where workspace_id = ${workspaceId} and id = ${id}`.pipe(Effect.map(first))
    })
  })
}) {}
