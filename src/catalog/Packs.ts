/**
 * Guard packs (docs/policies.md): `GET /v1/policies/packs` lists the vetted
 * sets of PackDocuments.ts, `POST /v1/policies/packs/{name}/install`
 * installs one as ordinary policies, in one transaction. A policy whose id
 * the workspace already holds is skipped, never overwritten, so installing
 * again is harmless and an edited copy stays as edited.
 */
import { Effect } from "effect"
import { stringify } from "yaml"
import { NotFound } from "../http/Errors.js"
import { PolicyId } from "./Domain.js"
import { findPack, GUARD_PACKS, type GuardPack, type PackDocument } from "./PackDocuments.js"
import { toPolicySummary } from "./Policies.js"
import { PolicyLimits } from "./PolicyLimits.js"
import { CatalogRepo, type PolicyAuthor } from "./Repo.js"
import { ImpactGate } from "../impact/Gate.js"

/** What the listing shows of a pack's policy: enough to choose, without reading the documents. */
const summaryOf = (pack: GuardPack) => ({
  name: pack.name,
  description: pack.description,
  policies: pack.policies.map((document) => ({
    id: PolicyId.make(document.id),
    description: document.description,
    action: document.action,
    severity: document.severity,
    applies_to: document.applies_to ?? (["output.proposed"] as const),
    mode: document.mode ?? ("enforce" as const)
  }))
})

const packNotFound = (name: string) =>
  new NotFound({
    code: "pack_not_found",
    message: `No guard pack ${name}; the packs are ${GUARD_PACKS.map((pack) => pack.name).join(", ")}.`
  })

export interface InstallOptions {
  readonly enabled?: boolean | undefined
  readonly owner_agent_id?: string | undefined
}

/** The document as installed: the pack's, with the caller's enabled flag and owner. */
const installedDocument = (document: PackDocument, options: InstallOptions) => ({
  ...document,
  enabled: options.enabled === true,
  ...(options.owner_agent_id === undefined ? {} : { owner_agent_id: options.owner_agent_id })
})

export class Packs extends Effect.Service<Packs>()("catalog/Packs", {
  effect: Effect.gen(function* () {
    const repo = yield* CatalogRepo
    const limits = yield* PolicyLimits
    const gate = yield* ImpactGate

    const install = Effect.fn("Packs.install")(function* (
      workspaceId: string,
      name: string,
      options: InstallOptions,
      author: PolicyAuthor
    ) {
      const pack = findPack(name)
      if (pack === undefined) return yield* packNotFound(name)
      // Only the policies this install adds are enabled by it (existing ids are skipped): read under the lock.
      const gateAdded = Effect.gen(function* () {
        if (options.enabled !== true) return
        const shippedIds = pack.policies.map((doc) => doc.id)
        const present = new Set((yield* repo.findPolicies(workspaceId, shippedIds)).map((row) => row.id))
        const added = pack.policies.filter((shipped) => !present.has(shipped.id))
        yield* gate.beforeEnabling(
          workspaceId,
          added.map((shipped) => ({ id: shipped.id, document: installedDocument(shipped, options) }))
        )
      })
      // One transaction: a pack that would pass a workspace limit installs nothing.
      const inserted = yield* limits.write(
        workspaceId,
        Effect.zipRight(
          gateAdded,
          Effect.forEach(pack.policies, (shipped) => {
            const document = installedDocument(shipped, options)
            return repo.insertPolicy(
              workspaceId,
              {
                id: document.id,
                description: document.description,
                family: document.family,
                severity: document.severity,
                action: document.action,
                enabled: document.enabled,
                ownerAgentId: options.owner_agent_id ?? null,
                sourceYaml: stringify(document),
                document,
                origin: `pack:${pack.name}`
              },
              author
            )
          })
        )
      )
      const ids = pack.policies.map((document) => document.id)
      const rows = yield* repo.findPolicies(workspaceId, ids)
      const installedIds = ids.filter((_, index) => inserted[index] === true)
      return {
        pack: pack.name,
        installed: installedIds.flatMap((id) => rows.filter((row) => row.id === id)).map(toPolicySummary),
        skipped: ids
          .filter((_, index) => inserted[index] !== true)
          .map((id) => ({
            id: PolicyId.make(id),
            reason: "a policy with this id already exists; it was left as it is"
          }))
      }
    })

    return {
      list: () => GUARD_PACKS.map(summaryOf),
      install
    }
  }),
  dependencies: [CatalogRepo.Default, ImpactGate.Default, PolicyLimits.Default]
}) {}
