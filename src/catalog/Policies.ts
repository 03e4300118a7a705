/**
 * Guardrail policies of a workspace: created from YAML or JSON documents
 * (kept verbatim as `source_yaml`), validated with every error's path,
 * enabled and disabled one at a time or in an all-or-nothing batch, and
 * drafted from natural language.
 */
import { Effect, Either, Option, Schema } from "effect"
import { BadRequest, Conflict, NotFound, Unprocessable } from "../http/Errors.js"
import { giveBackThread } from "../platform/Background.js"
import { DRAFT_EXAMPLES, draftMatchOf, draftPolicy, draftToPolicyDocument } from "./Drafting.js"
import { PolicyDocument, PolicyId } from "./Domain.js"
import { CompileAllowance } from "./CompileAllowance.js"
import { compileBudgetErrors } from "./CompileBudget.js"
import { compilePolicy, type PolicyErrors, readDocument, validatePolicy } from "./PolicyLanguage.js"
import { policyTestErrors, runPolicyTest, withPolicy } from "./PolicyTests.js"
import { CatalogSnapshot } from "./Snapshot.js"
import { versionsPage } from "./CatalogVersions.js"
import { toPolicyVersion, type VersionsPageQuery } from "./Lifecycle.js"
import { PolicyLimits } from "./PolicyLimits.js"
import { CatalogRepo, type PolicyAuthor, type PolicyRow } from "./Repo.js"
import { ImpactGate } from "../impact/Gate.js"

type Effect4 = "permit" | "deny" | "defer" | "rewrite"
type Severity = "low" | "medium" | "high" | "critical"
type Family = "content" | "tool" | "flow" | "approval" | "memory"

export const toPolicySummary = (row: PolicyRow) => ({
  id: PolicyId.make(row.id),
  description: row.description,
  family: row.family as Family,
  severity: row.severity as Severity,
  action: row.action as Effect4,
  enabled: row.enabled,
  owner_agent_id: row.owner_agent_id,
  ...(row.invalid_reason === null ? {} : { invalid_reason: row.invalid_reason })
})

export const toPolicyDetail = (row: PolicyRow) => ({
  ...toPolicySummary(row),
  source_yaml: row.source_yaml,
  version: row.version
})

const policyNotFound = (ids: ReadonlyArray<string>) =>
  new NotFound({
    code: "policy_not_found",
    message: `No policy ${ids.join(", ")} in this workspace${ids.length > 1 ? "; nothing was changed" : ""}.`,
    details: ids.map((id) => ({ path: "ids", message: `${id} not found` }))
  })

const idOf = (document: Record<string, unknown>) => (typeof document["id"] === "string" ? document["id"] : null)

/** Parses and validates a document (within the compile budget): its value, or the ValidationResult errors. */
const checkDocument = (body: Uint8Array | string) => {
  const parsed = readDocument(body)
  if (Either.isLeft(parsed)) return { valid: false as const, policy_id: null, errors: parsed.left }
  const overBudget = compileBudgetErrors([parsed.right["match"]], "match")
  if (overBudget.length > 0) return { valid: false as const, policy_id: idOf(parsed.right), errors: overBudget }
  const result = validatePolicy(parsed.right)
  if (!result.valid) return { ...result, valid: false as const }
  // A valid document's own tests must pass too (each against the policy alone).
  const failing = Either.match(decodeDocument(parsed.right), { onLeft: () => [], onRight: policyTestErrors })
  return failing.length === 0
    ? { ...result, valid: true as const, value: parsed.right as Record<string, unknown> }
    : { ...result, valid: false as const, errors: failing }
}

const decodeDocument = Schema.decodeUnknownEither(PolicyDocument)

/** How long `POST /v1/policies/test` runs tests before it lets other requests have the thread. */
const TEST_SLICE_MS = 20

interface PolicyTestResult {
  readonly policy_id: string
  readonly name: string
  readonly passed: boolean
  readonly expected: Effect4
  readonly actual: Effect4
}

const validationFailed = (errors: PolicyErrors) =>
  new BadRequest({
    code: "validation_failed",
    message: errors.map((error) => `${error.path === "" ? "document" : error.path}: ${error.message}`).join("; "),
    details: errors
  })

/** The stored columns of a valid document. */
const columnsOf = (document: Record<string, unknown>, body: Uint8Array | string) => ({
  id: String(document["id"]),
  description: String(document["description"]),
  family: String(document["family"]),
  severity: String(document["severity"]),
  action: String(document["action"]),
  ownerAgentId: typeof document["owner_agent_id"] === "string" ? document["owner_agent_id"] : null,
  sourceYaml: typeof body === "string" ? body : new TextDecoder().decode(body),
  document
})

const versionNotFound = (id: string, version: number) =>
  new NotFound({
    code: "policy_version_not_found",
    message: `Policy ${id} has no version ${version}; GET /v1/policies/${id}/versions lists them.`,
    details: [{ path: "version", message: `${version} not found` }]
  })

/** Why a stored document does not compile now, each message naming the policy. */
const storedDocumentErrors = (row: PolicyRow): PolicyErrors =>
  validatePolicy(row.document).errors.map((error) => ({ path: error.path, message: `${row.id}: ${error.message}` }))

export class Policies extends Effect.Service<Policies>()("catalog/Policies", {
  effect: Effect.gen(function* () {
    const repo = yield* CatalogRepo
    const snapshots = yield* CatalogSnapshot
    // Writes that add or change documents pass the workspace limits; enabling, disabling, deleting cannot raise them.
    const limits = yield* PolicyLimits
    // require_impact_before_enable: every write below that leaves a document enabled asks the gate first.
    const gate = yield* ImpactGate

    // Checking a document compiles its new regexes on this thread: within the workspace's compile allowance.
    const allowance = yield* CompileAllowance
    const checkWithinAllowance = (workspaceId: string, body: Uint8Array | string) =>
      allowance.metered(workspaceId, () => checkDocument(body))

    const validate = (workspaceId: string, body: Uint8Array) =>
      Effect.map(checkWithinAllowance(workspaceId, body), (result) => ({
        valid: result.valid,
        policy_id: result.policy_id,
        errors: result.errors
      }))

    const create = Effect.fn("Policies.create")(function* (
      workspaceId: string,
      body: Uint8Array,
      author: PolicyAuthor
    ) {
      const checked = yield* checkWithinAllowance(workspaceId, body)
      if (!checked.valid) return yield* validationFailed(checked.errors)
      const columns = columnsOf(checked.value, body)
      if (checked.value["enabled"] !== false) {
        yield* gate.beforeEnabling(workspaceId, [{ id: columns.id, document: checked.value }])
      }
      const inserted = yield* limits.write(
        workspaceId,
        repo.insertPolicy(
          workspaceId,
          { ...columns, enabled: checked.value["enabled"] !== false, origin: null },
          author
        )
      )
      if (!inserted) {
        return yield* new Conflict({
          code: "policy_exists",
          message: `A policy with id ${columns.id} already exists in this workspace.`,
          details: [{ path: "id", message: "already taken" }]
        })
      }
      return yield* detail(workspaceId, columns.id)
    })

    /**
     * Makes a document (a PUT body, or an old version's text on rollback) the policy's next version.
     * `enabled` keeps its current value unless the document gives it.
     */
    const replace = Effect.fn("Policies.replace")(function* (
      workspaceId: string,
      id: string,
      body: Uint8Array | string,
      author: PolicyAuthor
    ) {
      const checked = yield* checkWithinAllowance(workspaceId, body)
      if (!checked.valid) return yield* validationFailed(checked.errors)
      const columns = columnsOf(checked.value, body)
      if (columns.id !== id) {
        return yield* validationFailed([
          { path: "id", message: `id ${columns.id} must equal the policy id of the path (${id})` }
        ])
      }
      const enabled = checked.value["enabled"]
      // Under the workspace's policy lock: whether it stays enabled is read as a concurrent enable left it.
      const replaced = yield* limits.write(
        workspaceId,
        Effect.gen(function* () {
          const staysEnabled =
            typeof enabled === "boolean" ? enabled : (yield* repo.findPolicies(workspaceId, [id]))[0]?.enabled === true
          if (staysEnabled) yield* gate.beforeEnabling(workspaceId, [{ id, document: checked.value }])
          return yield* repo.replacePolicy(
            workspaceId,
            { ...columns, enabled: typeof enabled === "boolean" ? enabled : null },
            author
          )
        })
      )
      return yield* Option.match(replaced, {
        onNone: () => Effect.fail(policyNotFound([id])),
        onSome: (row) => Effect.succeed(toPolicyDetail(row))
      })
    })

    /** A page of versions, newest first: a deleted policy's still answer; an id that never existed is a 404. */
    const versions = Effect.fn("Policies.versions")((workspaceId: string, id: string, query: VersionsPageQuery) =>
      versionsPage(
        query,
        (below, count) => repo.listPolicyVersions(workspaceId, id, below, count),
        (row) => toPolicyVersion(row),
        () => policyNotFound([id])
      )
    )

    const rollback = Effect.fn("Policies.rollback")(function* (
      workspaceId: string,
      id: string,
      version: number,
      author: PolicyAuthor
    ) {
      const found = yield* repo.findPolicyVersion(workspaceId, id, version)
      if (Option.isNone(found)) return yield* versionNotFound(id, version)
      // The old text is checked again: rules may have tightened since it was current.
      return yield* replace(workspaceId, id, found.value.source_yaml, author)
    })

    const detail = Effect.fn("Policies.detail")((workspaceId: string, id: string) =>
      repo
        .findPolicies(workspaceId, [id])
        .pipe(
          Effect.flatMap((rows) =>
            rows[0] === undefined ? Effect.fail(policyNotFound([id])) : Effect.succeed(toPolicyDetail(rows[0]))
          )
        )
    )

    // Under the workspace's policy lock: a batch enable that found the policy does not then skip it unseen.
    const remove = Effect.fn("Policies.remove")((workspaceId: string, id: string) =>
      limits
        .locked(workspaceId, repo.deletePolicy(workspaceId, id))
        .pipe(Effect.flatMap((deleted) => (deleted ? Effect.void : Effect.fail(policyNotFound([id])))))
    )

    /** All-or-nothing: an unknown id is a 404 that changes nothing. */
    const setEnabled = Effect.fn("Policies.setEnabled")(function* (
      workspaceId: string,
      ids: ReadonlyArray<string>,
      enabled: boolean
    ) {
      const unique = [...new Set(ids)]
      if (unique.length === 0) return []
      // Under the workspace's policy lock: the documents checked are the ones enabled, not ones a PUT replaced meanwhile.
      yield* limits.locked(
        workspaceId,
        Effect.gen(function* () {
          const found = yield* repo.findPolicies(workspaceId, unique)
          const missing = unique.filter((id) => !found.some((row) => row.id === id))
          if (missing.length > 0) return yield* policyNotFound(missing)
          // A stored document that no longer compiles is not enabled again (docs/policies.md).
          const invalid = enabled ? found.flatMap((row) => storedDocumentErrors(row)) : []
          if (invalid.length > 0) return yield* validationFailed(invalid)
          if (enabled) {
            const turnedOn = found.filter((row) => !row.enabled)
            yield* gate.beforeEnabling(
              workspaceId,
              turnedOn.map((row) => ({ id: row.id, document: row.document }))
            )
          }
          yield* repo.setEnabled(workspaceId, unique, enabled)
        })
      )
      return (yield* repo.findPolicies(workspaceId, unique)).map(toPolicySummary)
    })

    /** `POST /v1/policies/test`: the tests of the enabled policies (or of `ids`) over the workspace's current set. */
    const runTests = Effect.fn("Policies.runTests")(function* (
      workspaceId: string,
      ids: ReadonlyArray<string> | undefined
    ) {
      const unique = ids === undefined ? undefined : [...new Set(ids)]
      const rows =
        unique === undefined
          ? yield* repo.listPolicies(workspaceId, { enabledOnly: true })
          : unique.length === 0
            ? []
            : yield* repo.findPolicies(workspaceId, unique)
      const missing = (unique ?? []).filter((id) => !rows.some((row) => row.id === id))
      if (missing.length > 0) return yield* policyNotFound(missing)
      const snapshot = yield* snapshots.get(workspaceId)
      // Up to MAX_POLICIES_PER_WORKSPACE x 50 decisions over the whole set (tens of seconds): the thread is
      // given back to other requests every TEST_SLICE_MS.
      const results: Array<PolicyTestResult> = []
      let sliceStart = performance.now()
      for (const row of rows) {
        const decoded = decodeDocument(row.document)
        if (Either.isLeft(decoded)) continue
        const document = decoded.right
        const policy = compilePolicy(document, row.version)
        if (policy.errors.length > 0) continue
        // A policy named by id is tested as enabled, even when it is not.
        const set = withPolicy(snapshot, policy)
        for (const test of document.tests ?? []) {
          if (performance.now() - sliceStart > TEST_SLICE_MS) {
            yield* giveBackThread
            sliceStart = performance.now()
          }
          const outcome = runPolicyTest(set, policy, test)
          results.push({
            policy_id: row.id,
            name: test.name,
            passed: outcome.passed,
            expected: test.expect,
            actual: outcome.actual
          })
        }
      }
      const passed = results.filter((result) => result.passed).length
      return { results, passed, failed: results.length - passed }
    })

    const draft = Effect.fn("Policies.draft")((prompt: string) =>
      Option.match(draftPolicy(prompt), {
        onNone: () =>
          Effect.fail(
            new Unprocessable({
              code: "draft_not_understood",
              message: `Could not draft a policy from that prompt. Try phrasings such as: ${DRAFT_EXAMPLES.map((example) => `"${example}"`).join(", ")}.`
            })
          ),
        onSome: (found) =>
          Effect.succeed({
            draft: {
              ...draftToPolicyDocument(found),
              enabled: false,
              match: draftMatchOf(found),
              match_type: found.match_type,
              match_value: found.match_value,
              rewrite: found.rewrite ?? ""
            }
          })
      })
    )

    return {
      list: Effect.fn("Policies.list")((workspaceId: string) =>
        Effect.map(repo.listPolicies(workspaceId), (rows) => rows.map(toPolicySummary))
      ),
      validate,
      create,
      replace,
      versions,
      rollback,
      detail,
      remove,
      setEnabled,
      runTests,
      draft
    }
  }),
  dependencies: [CatalogRepo.Default, CompileAllowance.Default, ImpactGate.Default, PolicyLimits.Default]
}) {}
