/** SQL of the catalog. Every query takes the workspace id. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { cutAtBytes, cutPage, decodeCutRows, MAX_PAGE_BYTES } from "../platform/PageBytes.js"
import { dieOnErrors } from "../platform/Sql.js"
import { writeWithinCount } from "../platform/WorkspaceCaps.js"
import {
  AgentRow,
  KnowledgeSourceFileRow,
  KnowledgeSourceRow,
  LabelPolicyRow,
  NamedPolicyVersionRow,
  PolicyRow,
  PolicyVersionRow,
  ToolMetadataRow
} from "./RepoRows.js"

export type {
  AgentRow,
  KnowledgeSourceRow,
  LabelPolicyRow,
  PolicyRow,
  PolicyVersionRow,
  ToolMetadataRow
} from "./RepoRows.js"

/** Who made a policy version current: a user or an API key (their ids), or the service itself (e.g. the red team). */
export interface PolicyAuthor {
  readonly kind: "user" | "key" | "system"
  readonly id: string
}

/** A workspace and one key in it (an agent id, an origin, a tool, a source id). */
const ByKey = Schema.Struct({ workspaceId: Schema.String, key: Schema.String })

const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

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

/** A replaced document: `enabled` null keeps the current value. */
export interface ReplacedPolicy extends Omit<NewPolicy, "enabled" | "origin"> {
  readonly enabled: boolean | null
}

/** An agent profile as written; its version is the store's to number. */
export interface NewAgent {
  readonly agentId: string
  readonly displayName: string
  readonly profile: unknown
  readonly sourceText: string
}

const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value))

export class CatalogRepo extends Effect.Service<CatalogRepo>()("catalog/CatalogRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const policyColumns = sql`id, description, family, severity, action, enabled, owner_agent_id, source_yaml, document, origin, invalid_reason, version`
    const sourceColumns = sql`id, kind, title, location, status, metadata, file_name, media_type, byte_size,
                              created_at, updated_at, last_indexed_at`
    const labelColumns = sql`origin, enabled, confidentiality, integrity, trust, version`
    const toolColumns = sql`tool, enabled, metadata, version`
    const agentColumns = sql`agent_id, profile, source_text, version`
    const decodePolicies = Schema.decodeUnknown(Schema.Array(PolicyRow))
    const decodeLabelPolicies = Schema.decodeUnknown(Schema.Array(LabelPolicyRow))
    const decodeToolMetadata = Schema.decodeUnknown(Schema.Array(ToolMetadataRow))
    const decodeKnowledgeSources = Schema.decodeUnknown(Schema.Array(KnowledgeSourceRow))
    const decodePolicyVersions = Schema.decodeUnknown(Schema.Array(PolicyVersionRow))
    const decodeCutPolicyVersions = decodeCutRows(PolicyVersionRow)
    const decodeCutSources = decodeCutRows(KnowledgeSourceRow)
    const decodeNamedPolicyVersions = Schema.decodeUnknown(Schema.Array(NamedPolicyVersionRow))
    const versionColumns = sql`version, source_yaml, document, enabled, created_by_kind, created_by_id, created_at`

    /** The next version of a policy id: after every recorded one, so a re-created id continues its history. */
    const nextVersion = (workspaceId: string, id: string) =>
      sql`(select coalesce(max(version), 0) + 1 from policy_versions
           where workspace_id = ${workspaceId} and policy_id = ${id})`

    /**
     * The next version of an agent, tool or label policy (catalog_versions, CatalogVersions.ts): after
     * every recorded one, so one created again continues its history.
     */
    const nextCatalogVersion = (workspaceId: string, resource: string, key: string) =>
      sql`(select coalesce(max(version), 0) + 1 from catalog_versions
           where workspace_id = ${workspaceId} and resource = ${resource} and key = ${key})`
    const decodeVersions = Schema.decodeUnknown(Schema.Array(Schema.Struct({ version: Schema.Int })))
    const versionOf = (rows: ReadonlyArray<{ readonly version: number }>) => first(rows.map((row) => row.version))

    /** Records the version a write made current (run in the write's transaction). */
    const recordVersion = (workspaceId: string, row: PolicyRow, author: PolicyAuthor) =>
      sql`insert into policy_versions (workspace_id, policy_id, version, source_yaml, document, enabled,
                                       created_by_kind, created_by_id)
          values (${workspaceId}, ${row.id}, ${row.version}, ${row.source_yaml}, ${json(row.document)}, ${row.enabled},
                  ${author.kind}, ${author.id})
          on conflict do nothing`
    const recordVersions = (workspaceId: string, author: PolicyAuthor) => (rows: ReadonlyArray<PolicyRow>) =>
      Effect.as(
        Effect.forEach(rows, (row) => recordVersion(workspaceId, row, author), { discard: true }),
        first(rows)
      )

    const findAgent = SqlSchema.findOne({
      Request: ByKey,
      Result: AgentRow,
      execute: ({ key, workspaceId }) =>
        sql`select ${agentColumns} from agents where workspace_id = ${workspaceId} and agent_id = ${key}`
    })
    const findLabelPolicy = SqlSchema.findOne({
      Request: ByKey,
      Result: LabelPolicyRow,
      execute: ({ key, workspaceId }) =>
        sql`select ${labelColumns} from label_policies where workspace_id = ${workspaceId} and origin = ${key}`
    })
    const findToolMetadata = SqlSchema.findOne({
      Request: ByKey,
      Result: ToolMetadataRow,
      execute: ({ key, workspaceId }) =>
        sql`select ${toolColumns} from tool_metadata where workspace_id = ${workspaceId} and tool = ${key}`
    })
    const findKnowledgeSourceFile = SqlSchema.findOne({
      Request: ByKey,
      Result: KnowledgeSourceFileRow,
      execute: ({ key, workspaceId }) =>
        sql`select file_name, media_type, byte_size, data from knowledge_sources
            where workspace_id = ${workspaceId} and id = ${key}`
    })

    return dieOnErrors({
      // ---- agents
      /** The new agent's version; `None` when the agent id is taken in this workspace. */
      insertAgent: (workspaceId: string, agent: NewAgent) =>
        sql`insert into agents (workspace_id, agent_id, display_name, profile, source_text, version)
            values (${workspaceId}, ${agent.agentId}, ${agent.displayName}, ${json(agent.profile)}, ${agent.sourceText},
                    ${nextCatalogVersion(workspaceId, "agent", agent.agentId)})
            on conflict do nothing returning version`.pipe(Effect.flatMap(decodeVersions), Effect.map(versionOf)),
      /** The replaced profile's (next) version; `None` when there is no such agent. */
      replaceAgent: (workspaceId: string, agent: NewAgent) =>
        sql`update agents set display_name = ${agent.displayName}, profile = ${json(agent.profile)},
            source_text = ${agent.sourceText}, updated_at = now(),
            version = greatest(version + 1, ${nextCatalogVersion(workspaceId, "agent", agent.agentId)})
            where workspace_id = ${workspaceId} and agent_id = ${agent.agentId} returning version`.pipe(
          Effect.flatMap(decodeVersions),
          Effect.map(versionOf)
        ),
      listAgents: SqlSchema.findAll({
        Request: Schema.String,
        Result: AgentRow,
        execute: (workspaceId) =>
          sql`select ${agentColumns} from agents where workspace_id = ${workspaceId}
              order by created_at desc, agent_id`
      }),
      findAgent: (workspaceId: string, agentId: string) => findAgent({ workspaceId, key: agentId }),
      deleteAgent: (workspaceId: string, agentId: string) =>
        sql`delete from agents where workspace_id = ${workspaceId} and agent_id = ${agentId} returning agent_id`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),

      // ---- policies
      /** Answers false when the policy id is taken in this workspace; else records its first version. */
      insertPolicy: (workspaceId: string, policy: NewPolicy, author: PolicyAuthor) =>
        sql`insert into policies (workspace_id, id, description, family, severity, action, enabled, owner_agent_id,
                                  source_yaml, document, origin, version)
            values (${workspaceId}, ${policy.id}, ${policy.description}, ${policy.family}, ${policy.severity},
                    ${policy.action}, ${policy.enabled}, ${policy.ownerAgentId}, ${policy.sourceYaml},
                    ${json(policy.document)}, ${policy.origin}, ${nextVersion(workspaceId, policy.id)})
            on conflict do nothing returning ${policyColumns}`.pipe(
          Effect.flatMap(decodePolicies),
          Effect.flatMap(recordVersions(workspaceId, author)),
          Effect.map(Option.isSome)
        ),
      /** Replaces a policy's document as its next version; `None` when there is no such policy. */
      replacePolicy: (workspaceId: string, policy: ReplacedPolicy, author: PolicyAuthor) =>
        sql`update policies set description = ${policy.description}, family = ${policy.family},
              severity = ${policy.severity}, action = ${policy.action},
              enabled = ${policy.enabled === null ? sql`enabled` : sql`${policy.enabled}`},
              owner_agent_id = ${policy.ownerAgentId}, source_yaml = ${policy.sourceYaml},
              document = ${json(policy.document)}, invalid_reason = null,
              version = greatest(version, ${nextVersion(workspaceId, policy.id)} - 1) + 1, updated_at = now()
            where workspace_id = ${workspaceId} and id = ${policy.id}
            returning ${policyColumns}`.pipe(
          Effect.flatMap(decodePolicies),
          Effect.flatMap(recordVersions(workspaceId, author))
        ),
      /** Up to `count` versions below `below`, newest first; a deleted policy's versions stay. */
      listPolicyVersions: (workspaceId: string, id: string, below: Option.Option<number>, count: number) =>
        cutAtBytes(
          sql,
          sql`select ${versionColumns} from policy_versions where workspace_id = ${workspaceId} and policy_id = ${id}
                ${Option.match(below, { onNone: () => sql``, onSome: (version) => sql`and version < ${version}` })}
              order by version desc limit ${count}`,
          sql`version desc`,
          sql`octet_length(source_yaml) + coalesce(octet_length(document::text), 0)`,
          MAX_PAGE_BYTES
        ).pipe(Effect.flatMap(decodeCutPolicyVersions)),
      findPolicyVersion: (workspaceId: string, id: string, version: number) =>
        sql`select ${versionColumns} from policy_versions
            where workspace_id = ${workspaceId} and policy_id = ${id} and version = ${version}`.pipe(
          Effect.flatMap(decodePolicyVersions),
          Effect.map(first)
        ),
      /** The named versions that exist, each with its policy id (in no particular order). */
      findPolicyVersions: (
        workspaceId: string,
        refs: ReadonlyArray<{ readonly id: string; readonly version: number }>
      ) =>
        sql`select policy_id, ${versionColumns} from policy_versions
            where workspace_id = ${workspaceId} and (policy_id, version) in
              (select id, version from jsonb_to_recordset(${JSON.stringify(refs)}::jsonb) as r(id text, version int))`.pipe(
          Effect.flatMap(decodeNamedPolicyVersions)
        ),
      /** Replaces a generated policy's document, keeping whether it is enabled; `None` when an authored policy holds the id. */
      upsertGeneratedPolicy: (workspaceId: string, policy: NewPolicy, author: PolicyAuthor) =>
        sql`insert into policies (workspace_id, id, description, family, severity, action, enabled,
                                  owner_agent_id, source_yaml, document, origin, version)
            values (${workspaceId}, ${policy.id}, ${policy.description}, ${policy.family}, ${policy.severity},
                    ${policy.action}, false, ${policy.ownerAgentId}, ${policy.sourceYaml}, ${json(policy.document)},
                    ${policy.origin}, ${nextVersion(workspaceId, policy.id)})
            on conflict (workspace_id, id) do update set description = excluded.description, family = excluded.family,
              severity = excluded.severity, action = excluded.action, owner_agent_id = excluded.owner_agent_id,
              source_yaml = excluded.source_yaml, document = excluded.document, invalid_reason = null,
              -- regenerating an unchanged document is not a new version
              version = policies.version + (policies.source_yaml <> excluded.source_yaml)::int, updated_at = now()
            where policies.origin = 'agent_profile'
            returning ${policyColumns}`.pipe(
          Effect.flatMap(decodePolicies),
          Effect.flatMap(recordVersions(workspaceId, author))
        ),
      listPolicies: (workspaceId: string, filter: { ownerAgentId?: string; enabledOnly?: boolean } = {}) =>
        sql`select ${policyColumns} from policies where workspace_id = ${workspaceId}
            ${filter.ownerAgentId === undefined ? sql`` : sql`and owner_agent_id = ${filter.ownerAgentId}`}
            ${filter.enabledOnly === true ? sql`and enabled` : sql``}
            order by created_at desc, id`.pipe(Effect.flatMap(decodePolicies)),
      findPolicies: (workspaceId: string, ids: ReadonlyArray<string>) =>
        ids.length === 0
          ? Effect.succeed([])
          : sql`select ${policyColumns} from policies where workspace_id = ${workspaceId} and id in ${sql.in(ids)}`.pipe(
              Effect.flatMap(decodePolicies)
            ),
      setEnabled: (workspaceId: string, ids: ReadonlyArray<string>, enabled: boolean) =>
        sql`update policies set enabled = ${enabled}, updated_at = now()
            where workspace_id = ${workspaceId} and id in ${sql.in(ids)}`,
      /**
       * Disables a policy whose document (that `version`) no longer compiles, recording why; a version a write
       * made current since (a PUT fixing it) is left as it is.
       */
      flagInvalidPolicy: (workspaceId: string, id: string, version: number, reason: string) =>
        sql`update policies set enabled = false, invalid_reason = ${reason}, updated_at = now()
            where workspace_id = ${workspaceId} and id = ${id} and version = ${version}`,
      deletePolicy: (workspaceId: string, id: string) =>
        sql`delete from policies where workspace_id = ${workspaceId} and id = ${id} returning id`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),
      /** Deletes the agent's generated policies whose ids `keep` lacks (their phrases left the profile). */
      deleteStaleGenerated: (workspaceId: string, agentId: string, keep: ReadonlyArray<string>) =>
        sql`delete from policies
            where workspace_id = ${workspaceId} and owner_agent_id = ${agentId} and origin = 'agent_profile'
            ${keep.length === 0 ? sql`` : sql`and id not in ${sql.in(keep)}`}
            returning id`.pipe(Effect.map((rows) => rows.length)),
      disableOwnedPolicies: (workspaceId: string, agentId: string) =>
        sql`update policies set enabled = false, updated_at = now()
            where workspace_id = ${workspaceId} and owner_agent_id = ${agentId}`,

      // ---- label policies
      /** Creates or replaces a label policy as its next version. */
      upsertLabelPolicy: (workspaceId: string, row: Omit<LabelPolicyRow, "version">) =>
        sql`insert into label_policies (workspace_id, origin, enabled, confidentiality, integrity, trust, version)
            values (${workspaceId}, ${row.origin}, ${row.enabled}, ${json(row.confidentiality)}, ${json(row.integrity)},
                    ${json(row.trust)}, ${nextCatalogVersion(workspaceId, "label_policy", row.origin)})
            on conflict (workspace_id, origin) do update set enabled = excluded.enabled,
              confidentiality = excluded.confidentiality, integrity = excluded.integrity, trust = excluded.trust,
              version = greatest(label_policies.version + 1, excluded.version), updated_at = now()
            returning ${labelColumns}`.pipe(
          Effect.flatMap(decodeLabelPolicies),
          Effect.map((rows) => rows[0]!)
        ),
      listLabelPolicies: SqlSchema.findAll({
        Request: Schema.String,
        Result: LabelPolicyRow,
        execute: (workspaceId) =>
          sql`select ${labelColumns} from label_policies where workspace_id = ${workspaceId} order by origin`
      }),
      findLabelPolicy: (workspaceId: string, origin: string) => findLabelPolicy({ workspaceId, key: origin }),
      deleteLabelPolicy: (workspaceId: string, origin: string) =>
        sql`delete from label_policies where workspace_id = ${workspaceId} and origin = ${origin} returning origin`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),

      // ---- tool metadata
      /** Creates or replaces a tool's metadata as its next version. */
      upsertToolMetadata: (workspaceId: string, row: Omit<ToolMetadataRow, "version">) =>
        sql`insert into tool_metadata (workspace_id, tool, enabled, metadata, version)
            values (${workspaceId}, ${row.tool}, ${row.enabled}, ${json(row.metadata)},
                    ${nextCatalogVersion(workspaceId, "tool_metadata", row.tool)})
            on conflict (workspace_id, tool) do update set enabled = excluded.enabled, metadata = excluded.metadata,
              version = greatest(tool_metadata.version + 1, excluded.version), updated_at = now()
            returning ${toolColumns}`.pipe(
          Effect.flatMap(decodeToolMetadata),
          Effect.map((rows) => rows[0]!)
        ),
      listToolMetadata: SqlSchema.findAll({
        Request: Schema.String,
        Result: ToolMetadataRow,
        execute: (workspaceId) =>
          sql`select ${toolColumns} from tool_metadata where workspace_id = ${workspaceId} order by tool`
      }),
      findToolMetadata: (workspaceId: string, tool: string) => findToolMetadata({ workspaceId, key: tool }),
      deleteToolMetadata: (workspaceId: string, tool: string) =>
        sql`delete from tool_metadata where workspace_id = ${workspaceId} and tool = ${tool} returning tool`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),

      // ---- knowledge sources
      /**
       * None when the workspace already stores `caps.sources` sources, or its files and this one's would pass
       * `caps.bytes` (both counted under one per-workspace lock, so concurrent uploads cannot both pass).
       */
      insertKnowledgeSource: (
        workspaceId: string,
        source: {
          id: string
          kind: string
          title: string
          location: string | null
          metadata: unknown
          file: { name: string; mediaType: string; data: Buffer } | null
        },
        caps: { readonly sources: number; readonly bytes: number }
      ) =>
        writeWithinCount(
          sql,
          `knowledge_sources:${workspaceId}`,
          // Files that would not fit count as a full workspace.
          sql`select case when coalesce(sum(byte_size), 0) + ${source.file?.data.length ?? 0} > ${caps.bytes}
                          then ${caps.sources} else count(*)::int end as stored
                from knowledge_sources where workspace_id = ${workspaceId}`,
          caps.sources,
          Effect.succeed(false),
          sql`insert into knowledge_sources (id, workspace_id, kind, title, location, metadata,
                                    file_name, media_type, byte_size, data)
              values (${source.id}, ${workspaceId}, ${source.kind}, ${source.title}, ${source.location},
                      ${json(source.metadata ?? {})}, ${source.file?.name ?? null}, ${source.file?.mediaType ?? null},
                      ${source.file?.data.length ?? null}, ${source.file?.data ?? null})
              returning ${sourceColumns}`.pipe(
            Effect.flatMap(decodeKnowledgeSources),
            Effect.map((rows) => rows[0]!)
          )
        ),
      /** Answers whether the source was there (and is gone). */
      deleteKnowledgeSource: (workspaceId: string, id: string) =>
        sql`delete from knowledge_sources where workspace_id = ${workspaceId} and id = ${id} returning id`.pipe(
          Effect.map((rows) => rows.length === 1)
        ),
      /** Newest first after the source `after`, cut at `maxBytes` of titles, locations and metadata (`cutAtBytes`). */
      listKnowledgeSources: (workspaceId: string, limit: number, after: Option.Option<string>, maxBytes: number) =>
        cutAtBytes(
          sql,
          sql`select ${sourceColumns} from knowledge_sources where workspace_id = ${workspaceId}
                ${Option.match(after, {
                  onNone: () => sql``,
                  onSome: (id) => sql`and (created_at, id) < (select created_at, id from knowledge_sources
                                                           where workspace_id = ${workspaceId} and id = ${id})`
                })}
              order by created_at desc, id desc limit ${limit + 1}`,
          sql`created_at desc, id desc`,
          sql`octet_length(title) + coalesce(octet_length(location), 0) + octet_length(metadata::text)`,
          maxBytes
        ).pipe(
          Effect.flatMap(decodeCutSources),
          Effect.map((rows) => cutPage(rows, limit))
        ),
      findKnowledgeSourceFile: (workspaceId: string, id: string) => findKnowledgeSourceFile({ workspaceId, key: id })
    })
  })
}) {}
