/**
 * What both adapter suites set up: a tenant with an agent and the policies the
 * agent loop meets (an injection in the input, a discount code in the reply,
 * money sent to an attacker, a secret in a tool's result), a client of a
 * runtime key, and the stub model on loopback (examples/stub-model.ts).
 */
import { Effect } from "effect"
import { startStubModel } from "../../examples/stub-model.js"
import { createGuardrailClient } from "../../src/client/index.js"
import { queryDatabase } from "../support/Database.js"
import { createAgent, createPolicy } from "../support/Events.js"
import { createKey, tenant } from "../support/Tenants.js"
import { baseUrl, TestDatabaseUrl } from "../support/TestServer.js"

export const AGENT = "support-bot"

export const adapterSetUp = Effect.gen(function* () {
  const base = yield* baseUrl
  const owner = yield* tenant(base)
  yield* createAgent(base, owner, AGENT)
  yield* createPolicy(base, owner, "no-override", {
    value: "ignore previous instructions",
    appliesTo: ["input.received"]
  })
  yield* createPolicy(base, owner, "no-discount-code", { value: "SAVE50" })
  yield* createPolicy(base, owner, "no-attacker", { value: "attacker", target: "params.to" })
  yield* createPolicy(base, owner, "no-secret-in-results", {
    action: "rewrite",
    value: "SECRET-123",
    rewrite: "[removed]",
    appliesTo: ["tool.result"]
  })
  const key = yield* createKey(owner)
  const client = createGuardrailClient({
    baseUrl: base,
    apiKey: key.plaintext_key,
    agentId: AGENT,
    workspaceId: owner.workspaceId,
    environmentId: owner.defaultEnvironmentId
  })
  const stub = yield* Effect.acquireRelease(
    Effect.promise(() => startStubModel()),
    (model) => Effect.promise(() => model.close())
  )
  return { base, owner, client, stub }
})

/** The workspace's decisions so far, oldest first: kind, operation and effect. */
export const decisionsOf = (workspaceId: string) =>
  Effect.flatMap(TestDatabaseUrl, (db) =>
    queryDatabase<{ effect: string; kind: string; operation: string }>(
      db,
      `select payload->'request'->>'kind' as kind, payload->'request'->'action'->>'operation' as operation,
              decision as effect
         from traces where workspace_id = $1 order by created_at, id`,
      [workspaceId]
    )
  )

/** The rejection of a promise that must fail. */
export const rejectionOf = (promise: () => Promise<unknown>) =>
  Effect.promise(() =>
    promise().then(
      (value) => {
        throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
      },
      (error: unknown) => error
    )
  )
