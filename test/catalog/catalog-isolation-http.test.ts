/**
 * Tenant isolation and access for the catalog over HTTP: two users, each
 * with a workspace holding agents, generated and authored policies, label
 * policies, tool metadata and knowledge sources, some under the same ids.
 * Every by-id route answers 404 with the other workspace's ids and changes
 * nothing there; lists never leak; the same ids live independently in each
 * workspace. A runtime key may read the catalog but not write it (403
 * forbidden_credential).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, createKey, expectError, expectStatus, SERVER_OPTIONS, tenant } from "../identity/http-helpers.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import {
  createAgent,
  createPolicy,
  fullAgentYaml,
  generate,
  getPolicy,
  listPolicies,
  minimalAgentYaml,
  type PolicyDetailBody,
  policyYaml,
  sendText,
  setEnabled,
  YAML
} from "./catalog-helpers.js"

const LISTS = ["/v1/agents", "/v1/policies", "/v1/label-policies", "/v1/tool-metadata", "/v1/knowledge-sources"]

/**
 * A tenant whose catalog holds items under ids shared with every other
 * tenant (`shared-*`) and under ids of its own (`<name>-only*`); every text
 * carries `name` so a leak is visible.
 */
const populated = (base: string, name: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    const token = owner.jwt
    yield* createAgent(base, token, fullAgentYaml("shared-bot", `${name} shared bot`))
    yield* createAgent(base, token, minimalAgentYaml(`${name}-only-bot`, `${name} only bot`))
    const generated = yield* generate(base, token, "shared-bot")
    const enabledGenerated = generated[0]!.id
    yield* setEnabled(base, token, enabledGenerated, true)
    yield* createPolicy(base, token, policyYaml("shared-policy", { description: `${name} shared policy` }))
    yield* createPolicy(base, token, policyYaml(`${name}-only-policy`, { description: `${name} only policy` }))
    yield* createPolicy(
      base,
      token,
      policyYaml(`${name}-off-policy`, { description: `${name} off policy`, enabled: false })
    )
    for (const origin of ["shared_origin", `${name}_only_origin`]) {
      expectStatus(
        yield* call(base, "POST", "/v1/label-policies", { token, body: { origin, trust: name, integrity: { name } } }),
        200
      )
    }
    for (const tool of ["shared_tool", `${name}_only_tool`]) {
      expectStatus(
        yield* call(base, "POST", "/v1/tool-metadata", {
          token,
          body: { tool, reversible: false, side_effect: name }
        }),
        200
      )
    }
    const file = expectStatus(
      yield* call(base, "POST", "/v1/knowledge-sources", {
        token,
        body: {
          kind: "file",
          title: `${name} handbook`,
          file_name: `${name}.txt`,
          media_type: "text/plain",
          data_base64: Buffer.from(`${name} secret handbook`).toString("base64")
        }
      }),
      201
    ) as { id: string }
    const url = expectStatus(
      yield* call(base, "POST", "/v1/knowledge-sources", {
        token,
        body: { kind: "url", title: `${name} faq`, location: `https://${name}.example.com/faq` }
      }),
      201
    ) as { id: string }
    return { owner, name, generated, enabledGenerated, fileSourceId: file.id, urlSourceId: url.id }
  })

type Populated = Effect.Effect.Success<ReturnType<typeof populated>>

/** Everything a tenant's catalog holds, read by its owner: used to show that nothing changed. */
const catalogOf = (base: string, t: Populated) =>
  Effect.gen(function* () {
    const token = t.owner.jwt
    const lists: Record<string, unknown> = {}
    for (const path of LISTS) lists[path] = expectStatus(yield* call(base, "GET", path, { token }), 200)
    const policies = yield* listPolicies(base, token)
    const details: Array<PolicyDetailBody> = []
    for (const policy of policies) details.push(yield* getPolicy(base, token, policy.id))
    return {
      lists,
      details,
      agents: [
        expectStatus(yield* call(base, "GET", "/v1/agents/shared-bot", { token }), 200),
        expectStatus(yield* call(base, "GET", `/v1/agents/${t.name}-only-bot`, { token }), 200)
      ],
      guardrails: expectStatus(yield* call(base, "GET", "/v1/agents/shared-bot/guardrails", { token }), 200),
      labels: [
        expectStatus(yield* call(base, "GET", "/v1/label-policies/shared_origin", { token }), 200),
        expectStatus(yield* call(base, "GET", `/v1/label-policies/${t.name}_only_origin`, { token }), 200)
      ],
      tools: [
        expectStatus(yield* call(base, "GET", "/v1/tool-metadata/shared_tool", { token }), 200),
        expectStatus(yield* call(base, "GET", `/v1/tool-metadata/${t.name}_only_tool`, { token }), 200)
      ],
      file: expectStatus(yield* call(base, "GET", `/v1/knowledge-sources/${t.fileSourceId}/file`, { token }), 200)
    }
  })

/** Every by-id route, aimed at `target`'s own ids: [method, path, body?, content type?]. */
const byIdAttempts = (target: Populated): ReadonlyArray<readonly [string, string, string?, string?]> => {
  const agent = `${target.name}-only-bot`
  const policy = `${target.name}-only-policy`
  return [
    ["GET", `/v1/agents/${agent}`],
    ["PUT", `/v1/agents/${agent}`, minimalAgentYaml(agent, "pwned"), YAML],
    ["DELETE", `/v1/agents/${agent}`],
    ["GET", `/v1/agents/${agent}/guardrails`],
    ["POST", `/v1/agents/${agent}/guardrails/generate`],
    ["GET", `/v1/policies/${policy}`],
    ["DELETE", `/v1/policies/${policy}`],
    ["PATCH", `/v1/policies/${policy}/enabled`, JSON.stringify({ enabled: false })],
    ["PATCH", `/v1/policies/${target.name}-off-policy/enabled`, JSON.stringify({ enabled: true })],
    ["PATCH", "/v1/policies/batch/enabled", JSON.stringify({ enabled: true, ids: [`${target.name}-off-policy`] })],
    // Generated ids are the same in every workspace that has a shared-bot: paired with an id only the target has.
    ["PATCH", "/v1/policies/batch/enabled", JSON.stringify({ enabled: false, ids: [policy, target.enabledGenerated] })],
    ["GET", `/v1/label-policies/${target.name}_only_origin`],
    ["DELETE", `/v1/label-policies/${target.name}_only_origin`],
    ["GET", `/v1/tool-metadata/${target.name}_only_tool`],
    ["DELETE", `/v1/tool-metadata/${target.name}_only_tool`],
    ["GET", `/v1/knowledge-sources/${target.fileSourceId}/file`],
    ["GET", `/v1/knowledge-sources/${target.urlSourceId}/file`]
  ]
}

const attempt = (
  base: string,
  token: string,
  [method, path, body, contentType]: readonly [string, string, string?, string?]
) =>
  call(base, method, path, {
    token,
    ...(body === undefined ? {} : { raw: body, contentType: contentType ?? "application/json" })
  })

layer(testServer("database"), SERVER_OPTIONS)("catalog tenant isolation and access", (it) => {
  describe("across workspaces", () => {
    it.effect("every by-id route answers 404 with the other workspace's ids, and changes nothing there", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const beta = yield* populated(base, "beta")
        const before = yield* catalogOf(base, beta)

        for (const target of byIdAttempts(beta)) {
          const response = yield* attempt(base, alpha.owner.jwt, target)
          expect(response.status, `${target[0]} ${target[1]}: ${response.text}`).toBe(404)
          expectError(response, 404)
          // Error messages may echo the requested id, never the other workspace's content.
          expect(response.text).not.toContain("beta ")
        }
        // A batch mixing an own id with the other workspace's: 404, and the own policy is unchanged too.
        const mixed = yield* call(base, "PATCH", "/v1/policies/batch/enabled", {
          token: alpha.owner.jwt,
          body: { enabled: true, ids: ["alpha-off-policy", "beta-off-policy"] }
        })
        expectError(mixed, 404, "policy_not_found")
        expect((yield* getPolicy(base, alpha.owner.jwt, "alpha-off-policy")).enabled).toBe(false)
        expect((yield* getPolicy(base, alpha.owner.jwt, alpha.enabledGenerated)).enabled).toBe(true)

        expect(yield* catalogOf(base, beta)).toEqual(before)
      })
    )

    it.effect("the same ids live independently in each workspace: changes through one never touch the other", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const beta = yield* populated(base, "beta")
        const before = yield* catalogOf(base, beta)
        const token = alpha.owner.jwt

        // Reads of shared ids answer alpha's own rows.
        expect(expectStatus(yield* call(base, "GET", "/v1/agents/shared-bot", { token }), 200).display_name).toBe(
          "alpha shared bot"
        )
        expect((yield* getPolicy(base, token, "shared-policy")).description).toBe("alpha shared policy")
        expect(
          expectStatus(yield* call(base, "GET", "/v1/label-policies/shared_origin", { token }), 200).policy.trust
        ).toBe("alpha")
        expect(
          expectStatus(yield* call(base, "GET", "/v1/tool-metadata/shared_tool", { token }), 200).metadata.side_effect
        ).toBe("alpha")

        // Writes to shared ids change alpha's rows only.
        expectStatus(
          yield* sendText(base, token, "PUT", "/v1/agents/shared-bot", minimalAgentYaml("shared-bot", "alpha renamed")),
          200
        )
        yield* generate(base, token, "shared-bot")
        yield* setEnabled(base, token, "shared-policy", false)
        expectStatus(
          yield* call(base, "PATCH", "/v1/policies/batch/enabled", {
            token,
            body: { enabled: true, ids: alpha.generated.map((policy) => policy.id) }
          }),
          200
        )
        expectStatus(
          yield* call(base, "POST", "/v1/label-policies", { token, body: { origin: "shared_origin", trust: "pwned" } }),
          200
        )
        expectStatus(
          yield* call(base, "POST", "/v1/tool-metadata", {
            token,
            body: { tool: "shared_tool", reversible: true, side_effect: "pwned" }
          }),
          200
        )
        expect((yield* call(base, "DELETE", "/v1/agents/shared-bot", { token })).status).toBe(204)
        expect((yield* call(base, "DELETE", "/v1/policies/shared-policy", { token })).status).toBe(204)
        expect((yield* call(base, "DELETE", "/v1/tool-metadata/shared_tool", { token })).status).toBe(204)
        // Creating beta's own ids in alpha is fine: ids are unique per workspace only.
        yield* createAgent(base, token, minimalAgentYaml("beta-only-bot", "alpha's copy"))
        yield* createPolicy(base, token, policyYaml("beta-only-policy", { description: "alpha's copy" }))

        expect(yield* catalogOf(base, beta)).toEqual(before)
      })
    )

    it.effect("lists never leak the other workspace's rows", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const beta = yield* populated(base, "beta")
        for (const [reader, other] of [
          [alpha, beta],
          [beta, alpha]
        ] as const) {
          for (const path of LISTS) {
            const response = yield* call(base, "GET", path, { token: reader.owner.jwt })
            expectStatus(response, 200)
            expect(response.text, path).not.toContain(other.name)
            expect(response.text, path).toContain(reader.name)
          }
          const guardrails = yield* call(base, "GET", "/v1/agents/shared-bot/guardrails", { token: reader.owner.jwt })
          expect(expectStatus(guardrails, 200).policies).toHaveLength(reader.generated.length)
          expect(guardrails.text).not.toContain(other.name)
          const sources = expectStatus(
            yield* call(base, "GET", "/v1/knowledge-sources", { token: reader.owner.jwt }),
            200
          )
          expect(sources.knowledge_sources.map((source: { id: string }) => source.id).sort()).toEqual(
            [reader.fileSourceId, reader.urlSourceId].sort()
          )
        }
      })
    )

    it.effect(
      "one user's second workspace (X-SERVICE-Workspace-Id) has a catalog of its own; a foreign one is 404",
      () =>
        Effect.gen(function* () {
          const base = yield* baseUrl
          const alpha = yield* populated(base, "alpha")
          const beta = yield* populated(base, "beta")
          const token = alpha.owner.jwt
          const second = expectStatus(
            yield* call(base, "POST", "/v1/team/my-workspaces", { token, body: { name: "Second" } }),
            201
          ) as { id: string }
          const inSecond = (method: string, path: string, options: { raw?: string; contentType?: string } = {}) =>
            call(base, method, path, { token, workspace: second.id, ...options })

          for (const path of LISTS) {
            const response = yield* inSecond("GET", path)
            expectStatus(response, 200)
            expect(response.text, path).not.toContain("alpha")
          }
          expectError(yield* inSecond("GET", "/v1/agents/shared-bot"), 404, "agent_not_found")
          expectError(yield* inSecond("GET", "/v1/policies/shared-policy"), 404, "policy_not_found")
          expectError(yield* inSecond("GET", `/v1/knowledge-sources/${alpha.fileSourceId}/file`), 404)
          expectStatus(
            yield* inSecond("POST", "/v1/agents", { raw: minimalAgentYaml("shared-bot", "second"), contentType: YAML }),
            201
          )
          expectStatus(
            yield* inSecond("POST", "/v1/policies", { raw: policyYaml("shared-policy"), contentType: YAML }),
            201
          )
          // The default workspace still answers its own rows.
          expect(expectStatus(yield* call(base, "GET", "/v1/agents/shared-bot", { token }), 200).display_name).toBe(
            "alpha shared bot"
          )
          expect((yield* getPolicy(base, token, "shared-policy")).description).toBe("alpha shared policy")

          // Naming a workspace the user is not a member of: 404 on every catalog route.
          for (const path of [...LISTS, "/v1/agents/shared-bot", "/v1/policies/shared-policy"]) {
            const response = yield* call(base, "GET", path, { token, workspace: beta.owner.workspaceId })
            expect(response.status, `${path}: ${response.text}`).toBe(404)
            expectError(response, 404)
            expect(response.text).not.toContain("beta ")
          }
        })
    )
  })

  describe("access", () => {
    const writeAttempts = (t: Populated): ReadonlyArray<readonly [string, string, string?, string?]> => [
      ["POST", "/v1/agents", minimalAgentYaml("key-made-bot"), YAML],
      ["PUT", "/v1/agents/shared-bot", minimalAgentYaml("shared-bot", "key renamed"), YAML],
      ["DELETE", "/v1/agents/shared-bot"],
      ["POST", "/v1/agents/shared-bot/guardrails/generate"],
      ["POST", "/v1/policies", policyYaml("key-made-policy"), YAML],
      ["POST", "/v1/policies/validate", policyYaml("key-checked-policy"), YAML],
      ["POST", "/v1/policies/draft", JSON.stringify({ prompt: "never promise a refund" })],
      ["DELETE", "/v1/policies/shared-policy"],
      ["PATCH", "/v1/policies/shared-policy/enabled", JSON.stringify({ enabled: false })],
      ["PATCH", "/v1/policies/batch/enabled", JSON.stringify({ enabled: false, ids: ["shared-policy"] })],
      ["POST", "/v1/label-policies", JSON.stringify({ origin: "key_origin" })],
      ["DELETE", "/v1/label-policies/shared_origin"],
      ["POST", "/v1/tool-metadata", JSON.stringify({ tool: "key_tool", reversible: true, side_effect: "none" })],
      ["DELETE", "/v1/tool-metadata/shared_tool"],
      ["POST", "/v1/knowledge-sources", JSON.stringify({ kind: "text", title: "key", text: "key" })],
      ["DELETE", `/v1/policies/${t.enabledGenerated}`]
    ]

    it.effect("a runtime key reads every catalog list and item of its workspace", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const key = (yield* createKey(base, alpha.owner)).plaintext_key
        for (const path of LISTS) {
          const withKey = yield* call(base, "GET", path, { token: key })
          const withSession = yield* call(base, "GET", path, { token: alpha.owner.jwt })
          expect(expectStatus(withKey, 200), path).toEqual(expectStatus(withSession, 200))
        }
        for (const path of [
          "/v1/agents/shared-bot",
          "/v1/agents/shared-bot/guardrails",
          "/v1/policies/shared-policy",
          "/v1/policies/schema",
          "/v1/label-policies/shared_origin",
          "/v1/tool-metadata/shared_tool",
          `/v1/knowledge-sources/${alpha.fileSourceId}/file`
        ]) {
          expectStatus(yield* call(base, "GET", path, { token: key }), 200)
        }
      })
    )

    it.effect("a runtime key gets 403 forbidden_credential on every catalog write, and nothing changes", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const before = yield* catalogOf(base, alpha)
        const key = (yield* createKey(base, alpha.owner)).plaintext_key
        for (const target of writeAttempts(alpha)) {
          const response = yield* attempt(base, key, target)
          expect(response.status, `${target[0]} ${target[1]}: ${response.text}`).toBe(403)
          expectError(response, 403, "forbidden_credential")
        }
        expect(yield* catalogOf(base, alpha)).toEqual(before)
      })
    )

    it.effect("a runtime key of one workspace gets 404 for the other workspace's ids", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const beta = yield* populated(base, "beta")
        const key = (yield* createKey(base, alpha.owner)).plaintext_key
        for (const target of byIdAttempts(beta).filter(([method]) => method === "GET")) {
          const response = yield* attempt(base, key, target)
          expect(response.status, `${target[1]}: ${response.text}`).toBe(404)
          expectError(response, 404)
        }
        for (const path of LISTS) {
          const response = yield* call(base, "GET", path, { token: key })
          expectStatus(response, 200)
          expect(response.text).not.toContain("beta")
        }
      })
    )

    it.effect("without a credential every catalog route is 401", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const alpha = yield* populated(base, "alpha")
        const before = yield* catalogOf(base, alpha)
        for (const target of [
          ...LISTS.map((path) => ["GET", path] as const),
          ...writeAttempts(alpha),
          ["GET", "/v1/agents/shared-bot"] as const
        ]) {
          const [method, path, body, contentType] = target as readonly [string, string, string?, string?]
          const response = yield* call(base, method, path, {
            ...(body === undefined ? {} : { raw: body, contentType: contentType ?? "application/json" })
          })
          expect(response.status, `${method} ${path}: ${response.text}`).toBe(401)
          expectError(response, 401)
        }
        expect(yield* catalogOf(base, alpha)).toEqual(before)
      })
    )
  })
})
