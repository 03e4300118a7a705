/**
 * A stored policy written before policies ran on RE2 may no longer compile (`[^]` is JavaScript
 * only). It must not silently stop protecting: when the policies are loaded it is disabled with
 * the reason recorded (`invalid_reason` in the API), and enabling it again is refused.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { queryDatabase } from "../support/Database.js"
import { createAgent, createPolicy, propose, reply } from "../support/Events.js"
import { expectInvalid } from "../support/Api.js"
import { eventually } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { getPolicy, listPolicies, setEnabled } from "./catalog-helpers.js"

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

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("stored policies that no longer compile", (it) => {
  it.effect("are disabled with a recorded reason when loaded, shown in the API, and cannot be enabled", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const databaseUrl = yield* TestDatabaseUrl
      const owner = yield* tenant(base)
      yield* createAgent(base, owner, AGENT)
      yield* queryDatabase(
        databaseUrl,
        `insert into policies (workspace_id, id, description, family, severity, action, enabled, source_yaml, document)
         values ($1, $2, $3, $4, $5, $6, true, $7, $8)`,
        [
          owner.workspaceId,
          LEGACY.id,
          LEGACY.description,
          LEGACY.family,
          LEGACY.severity,
          LEGACY.action,
          JSON.stringify(LEGACY),
          JSON.stringify(LEGACY)
        ]
      )
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
})
