/**
 * Agent profiles, authored as YAML or JSON. A profile is validated against
 * its Schema with every error's path; `agent_id` is unique per workspace.
 * Deleting an agent disables, never deletes, the policies it owns.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { BadRequest, Conflict, NotFound } from "../http/Errors.js"
import { ImpactGate } from "../impact/Gate.js"
import { AppConfig } from "../platform/Config.js"
import { storeWithinCapOrRefuse } from "../platform/WorkspaceCaps.js"
import { CatalogVersions } from "./CatalogVersions.js"
import { type VersionsPageQuery, withCanaries } from "./Lifecycle.js"
import { AgentId, AgentProfileDocument } from "./Domain.js"
import { ConfigChanges } from "./ConfigChanges.js"
import { generatedDocuments, withSource } from "./Generation.js"
import { toPolicyDetail, toPolicySummary } from "./Policies.js"
import { PolicyLimits } from "./PolicyLimits.js"
import { readDocument } from "./PolicyLanguage.js"
import { CatalogRepo, type NewAgent, type PolicyAuthor } from "./Repo.js"

type ProfileDocument = typeof AgentProfileDocument.Type

/** The profile as returned: every list present, absent texts null. */
export const normalizeProfile = (document: ProfileDocument) => ({
  agent_id: AgentId.make(document.agent_id),
  display_name: document.display_name,
  system_prompt: document.system_prompt ?? null,
  target_url: document.target_url ?? null,
  authority: {
    can_promise: document.authority.can_promise ?? [],
    cannot_promise: document.authority.cannot_promise ?? []
  },
  scope: { in_scope: document.scope.in_scope ?? [], out_of_scope: document.scope.out_of_scope ?? [] },
  tone: { target: document.tone.target, forbidden: document.tone.forbidden ?? [] },
  escalation_triggers: document.escalation_triggers ?? [],
  knowledge_sources: document.knowledge_sources ?? [],
  workflow_definition: document.workflow_definition ?? null,
  workflow_requirements: document.workflow_requirements ?? [],
  canaries: document.canaries ?? []
})
export type AgentProfile = ReturnType<typeof normalizeProfile>

/** A stored profile (a JSON column or a recorded version), as returned (`withCanaries`). */
const storedProfile = (stored: unknown): AgentProfile =>
  withCanaries(stored as Omit<AgentProfile, "canaries"> & { readonly canaries?: AgentProfile["canaries"] })

const decodeProfile = Schema.decodeUnknownEither(AgentProfileDocument, { errors: "all", onExcessProperty: "ignore" })

const invalidDocument = (errors: ReadonlyArray<{ readonly path: string; readonly message: string }>) =>
  new BadRequest({
    code: "validation_failed",
    message: errors.map((error) => `${error.path === "" ? "document" : error.path}: ${error.message}`).join("; "),
    details: errors
  })

const agentNotFound = (agentId: string) =>
  new NotFound({ code: "agent_not_found", message: `No agent ${agentId} in this workspace.` })

/** Parses and validates a profile document; 400 with every error's path otherwise. */
const parseProfile = (body: Uint8Array) =>
  Effect.gen(function* () {
    const parsed = readDocument(body)
    if (Either.isLeft(parsed)) return yield* invalidDocument(parsed.left)
    const decoded = decodeProfile(parsed.right)
    if (Either.isLeft(decoded)) {
      const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
      return yield* invalidDocument(issues.map((issue) => ({ path: issue.path.join("."), message: issue.message })))
    }
    return { profile: normalizeProfile(decoded.right), sourceText: new TextDecoder().decode(body) }
  })

export class Agents extends Effect.Service<Agents>()("catalog/Agents", {
  effect: Effect.gen(function* () {
    const repo = yield* CatalogRepo
    const changes = yield* ConfigChanges
    const history = yield* CatalogVersions
    const limits = yield* PolicyLimits
    const gate = yield* ImpactGate
    const sql = yield* SqlClient.SqlClient
    // Every decision's snapshot holds all of a workspace's profiles: without a cap it grew without end.
    const maxAgents = (yield* AppConfig).maxAgentsPerWorkspace

    /** Writes a profile (`write` answers its version, `None` when it could not) and records that version. */
    const writeProfile = <E>(
      workspaceId: string,
      row: NewAgent & { readonly profile: AgentProfile },
      author: PolicyAuthor,
      write: (workspaceId: string, row: NewAgent) => Effect.Effect<Option.Option<number>, E>
    ) =>
      changes.change(
        workspaceId,
        "agents",
        Effect.tap(write(workspaceId, row), (version) =>
          Option.match(version, {
            onNone: () => Effect.void,
            onSome: (version) =>
              history.record(
                workspaceId,
                { resource: "agent", key: row.agentId, version },
                { profile: row.profile, source_text: row.sourceText },
                author
              )
          })
        )
      )

    const find = Effect.fn("Agents.find")((workspaceId: string, agentId: string) =>
      repo.findAgent(workspaceId, agentId).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(agentNotFound(agentId)),
            onSome: (row) => Effect.succeed(storedProfile(row.profile))
          })
        )
      )
    )

    /** Inserts a new profile unless the workspace holds MAX_AGENTS_PER_WORKSPACE (409); `None` when it exists. */
    const insertWithinCap = (workspaceId: string, row: NewAgent) =>
      storeWithinCapOrRefuse(
        sql,
        "agents",
        workspaceId,
        { max: maxAgents, code: "agent_limit_reached", what: "agent profiles", setting: "MAX_AGENTS_PER_WORKSPACE" },
        Effect.map(repo.findAgent(workspaceId, row.agentId), Option.isSome),
        repo.insertAgent(workspaceId, row)
      )

    const create = Effect.fn("Agents.create")(function* (workspaceId: string, body: Uint8Array, author: PolicyAuthor) {
      const { profile, sourceText } = yield* parseProfile(body)
      const row = { agentId: profile.agent_id, displayName: profile.display_name, profile, sourceText }
      const inserted = yield* writeProfile(workspaceId, row, author, insertWithinCap)
      if (Option.isNone(inserted)) {
        return yield* new Conflict({
          code: "agent_exists",
          message: `Agent ${profile.agent_id} already exists; replace it with PUT /v1/agents/${profile.agent_id}.`
        })
      }
      return profile
    })

    const replace = Effect.fn("Agents.replace")(function* (
      workspaceId: string,
      agentId: string,
      body: Uint8Array,
      author: PolicyAuthor
    ) {
      const { profile, sourceText } = yield* parseProfile(body)
      if (profile.agent_id !== agentId) {
        return yield* invalidDocument([{ path: "agent_id", message: `must equal the path's agent id ${agentId}` }])
      }
      const row = { agentId, displayName: profile.display_name, profile, sourceText }
      const replaced = yield* writeProfile(workspaceId, row, author, repo.replaceAgent)
      return Option.isSome(replaced) ? profile : yield* agentNotFound(agentId)
    })

    const remove = Effect.fn("Agents.remove")((workspaceId: string, agentId: string) =>
      changes
        .change(
          workspaceId,
          "agents",
          Effect.tap(repo.deleteAgent(workspaceId, agentId), (deleted) =>
            deleted ? repo.disableOwnedPolicies(workspaceId, agentId) : Effect.void
          )
        )
        .pipe(Effect.flatMap((deleted) => (deleted ? Effect.void : Effect.fail(agentNotFound(agentId)))))
    )

    const guardrails = Effect.fn("Agents.guardrails")((workspaceId: string, agentId: string) =>
      Effect.zipRight(
        find(workspaceId, agentId),
        Effect.map(repo.listPolicies(workspaceId, { ownerAgentId: agentId }), (rows) => rows.map(toPolicySummary))
      )
    )

    /**
     * Regenerating keeps whether each policy is enabled, so a new document replacing an enabled one goes
     * live: it passes `require_impact_before_enable` like a PUT (docs/catalog.md#generated-guardrails).
     */
    const gateChangedEnabled = (
      workspaceId: string,
      generated: ReadonlyArray<{ readonly document: Record<string, unknown>; readonly sourceYaml: string }>
    ) =>
      // A profile may generate nothing, and `in ()` is no SQL.
      generated.length === 0
        ? Effect.void
        : Effect.flatMap(
            repo.findPolicies(
              workspaceId,
              generated.map((policy) => String(policy.document["id"]))
            ),
            (stored) => {
              const live = new Map(
                stored
                  .filter((row) => row.enabled && row.origin === "agent_profile")
                  .map((row) => [row.id, row.source_yaml])
              )
              const changed = generated.filter((policy) => {
                const current = live.get(String(policy.document["id"]))
                return current !== undefined && current !== policy.sourceYaml
              })
              return gate.beforeEnabling(
                workspaceId,
                changed.map((policy) => ({ id: String(policy.document["id"]), document: policy.document }))
              )
            }
          )

    /**
     * Upserts the policies derived from the profile (disabled, stable ids: regenerating does not duplicate) and
     * deletes the agent's generated policies the profile no longer derives.
     */
    const generate = Effect.fn("Agents.generate")(function* (
      workspaceId: string,
      agentId: string,
      author: PolicyAuthor
    ) {
      const profile = yield* find(workspaceId, agentId)
      const documents = generatedDocuments(profile)
      yield* limits.admit(documents.length)
      const generated = documents.map(withSource)
      const rows = yield* limits.write(
        workspaceId,
        Effect.zipRight(
          gateChangedEnabled(workspaceId, generated),
          Effect.forEach(generated, (policy) =>
            repo.upsertGeneratedPolicy(
              workspaceId,
              {
                id: String(policy.document["id"]),
                description: String(policy.document["description"]),
                family: String(policy.document["family"]),
                severity: String(policy.document["severity"]),
                action: String(policy.document["action"]),
                enabled: false,
                ownerAgentId: agentId,
                sourceYaml: policy.sourceYaml,
                document: policy.document,
                origin: "agent_profile"
              },
              author
            )
          ).pipe(
            // Inside the transaction: an id held by an authored policy rolls the whole generation back.
            Effect.flatMap((upserted) => {
              const taken = generated.filter((_, index) => Option.isNone(upserted[index]!))
              return taken.length === 0
                ? Effect.as(
                    // A phrase removed from the profile takes its generated policy with it (as a reconciling
                    // policy-as-code tool would), so the agent's guardrails are what its profile derives now.
                    repo.deleteStaleGenerated(
                      workspaceId,
                      agentId,
                      generated.map((policy) => String(policy.document["id"]))
                    ),
                    upserted.flatMap((row) => Option.toArray(row))
                  )
                : Effect.fail(
                    new Conflict({
                      code: "policy_id_taken",
                      message: `Authored policies already use the generated id(s) ${taken.map((policy) => String(policy.document["id"])).join(", ")}; rename them and generate again.`
                    })
                  )
            })
          )
        )
      )
      return rows.map(toPolicyDetail)
    })

    return {
      list: Effect.fn("Agents.list")((workspaceId: string) =>
        Effect.map(repo.listAgents(workspaceId), (rows) => rows.map((row) => storedProfile(row.profile)))
      ),
      find,
      /** Gateway routes and MCP servers decide for one agent: it must be registered (404 agent_not_found). */
      requireRegistered: (workspaceId: string, agentId: string | undefined) =>
        agentId === undefined ? Effect.void : Effect.asVoid(find(workspaceId, agentId)),
      /** `GET /v1/agents/{id}/versions`: a page, newest first; still answers after a delete. */
      versions: Effect.fn("Agents.versions")((workspaceId: string, agentId: string, query: VersionsPageQuery) =>
        history
          .versions<{ readonly profile: unknown; readonly source_text: string }, NotFound>(
            workspaceId,
            "agent",
            agentId,
            query,
            () => agentNotFound(agentId)
          )
          .pipe(
            Effect.map((page) => ({
              ...page,
              versions: page.versions.map((version) => ({ ...version, profile: storedProfile(version.profile) }))
            }))
          )
      ),
      create,
      replace,
      remove,
      guardrails,
      generate
    }
  }),
  dependencies: [CatalogRepo.Default, CatalogVersions.Default, ImpactGate.Default, PolicyLimits.Default]
}) {}
