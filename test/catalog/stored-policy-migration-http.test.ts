/**
 * A stored policy written before policies ran on RE2 may no longer compile (`[^]` is JavaScript
 * only). It must not silently stop protecting: when the policies are loaded it is disabled with
 * the reason recorded (`invalid_reason` in the API), and enabling it again is refused. Only that
 * document is disabled: a valid one a PUT made current meanwhile stays on.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { lockedRows, queryDatabase, serviceWaitsOnLocks } from "../support/Database.js"
import { createAgent, createPolicy, propose, reply, yamlBytes } from "../support/Events.js"
import { expectInvalid } from "../support/Api.js"
import { eventually } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { getPolicy, listPolicies, policyPath, policyYaml, setEnabled } from "./catalog-helpers.js"

const AGENT = "support-bot"

/** What the old JavaScript engine accepted and RE2 refuses: `[^]` (any character). */
const LEGACY = {
  id: "legacy-any-char",
  description: "legacy pattern",
  family: "content",
  severity: "high",
  action: "deny",
  match: { type: "regex", value: "refund[^]now", target: "content" }
}

/** Stores LEGACY enabled, as a policy written before RE2 was. */
const insertLegacy = (databaseUrl: string, workspaceId: string) =>
  queryDatabase(
    databaseUrl,
    `insert into policies (workspace_id, id, description, family, severity, action, enabled, source_yaml, document)
     values ($1, $2, $3, $4, $5, $6, true, $7, $8)`,
    [
      workspaceId,
      LEGACY.id,
      LEGACY.description,
      LEGACY.family,
      LEGACY.severity,
      LEGACY.action,
      JSON.stringify(LEGACY),
      JSON.stringify(LEGACY)
    ]
  )

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("stored policies that no longer compile", (it) => {
  it.effect("are disabled with a recorded reason when loaded, shown in the API, and cannot be enabled", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const databaseUrl = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, AGENT)
      yield* insertLegacy(databaseUrl, owner.workspaceId)
      // A change through the API reloads the workspace's policies at the next decision.
      yield* createPolicy(base, owner, "still-valid", { value: "top secret" })
      expect((yield* propose(base, owner, AGENT, reply("top secret"))).effect).toBe("deny")

      const detail = yield* eventually(
        Effect.gen(function* () {
          const body = yield* getPolicy(owner, LEGACY.id)
          expect(body.enabled).toBe(false)
          return body
        })
      )
      expect(detail.invalid_reason).toMatch(/^match\.value: Unsupported regex: missing \]/)
      const listed = yield* listPolicies(owner)
      expect(listed.find((policy) => policy.id === LEGACY.id)?.invalid_reason).toBe(detail.invalid_reason)
      expect(listed.find((policy) => policy.id === "still-valid")).not.toHaveProperty("invalid_reason")

      yield* expectInvalid(setEnabled(owner, LEGACY.id, true), "match.value")
    })
  )

  it.effect("a PUT committing while the old document is disabled keeps its new document on", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const databaseUrl = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, AGENT)
      yield* insertLegacy(databaseUrl, owner.workspaceId)
      // The row held locked: the PUT of a valid document waits on it first, then the decision's load, which read
      // the old document, waits to disable it; the PUT commits first.
      const [put, decision] = yield* Effect.scoped(
        Effect.gen(function* () {
          yield* lockedRows(databaseUrl, "select 1 from policies where workspace_id = $1 and id = $2 for update", [
            owner.workspaceId,
            LEGACY.id
          ])
          const put = yield* Effect.fork(
            owner.api.policies.replacePolicy({
              path: policyPath(LEGACY.id),
              payload: yamlBytes(policyYaml(LEGACY.id, { value: "refund now" }))
            })
          )
          yield* eventually(Effect.filterOrFail(serviceWaitsOnLocks(databaseUrl), (waiting) => waiting >= 1))
          const decision = yield* Effect.fork(propose(base, owner, AGENT, reply("hello")))
          yield* eventually(Effect.filterOrFail(serviceWaitsOnLocks(databaseUrl), (waiting) => waiting >= 2))
          return [put, decision] as const
        })
      ).pipe(Effect.flatMap(([put, decision]) => Effect.all([Fiber.join(put), Fiber.join(decision)])))
      expect(put).toMatchObject({ enabled: true, version: 2 })
      expect(decision.effect).toBe("permit")

      const detail = yield* getPolicy(owner, LEGACY.id)
      expect(detail).toMatchObject({ enabled: true, version: 2 })
      expect(detail).not.toHaveProperty("invalid_reason")
      expect((yield* propose(base, owner, AGENT, reply("A refund now."))).effect).toBe("deny")
    })
  )
})
