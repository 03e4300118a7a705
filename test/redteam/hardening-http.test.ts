/**
 * Hardening rejections: a candidate that would stop benign controls is
 * rejected with `false_blocks`; a target that no longer answers gives
 * `no_target_reply`. Rejected candidates are never created as policies.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { jsonAt } from "../support/Api.js"
import { parse, stringify } from "yaml"
import { PolicyId } from "../../src/catalog/Domain.js"
import { yamlBytes } from "../support/Events.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { agentYaml, createAgent, DEMO, demoAnswer, dispatch, stubTarget, waitForJob } from "./redteam-helpers.js"

layer(testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1" }), SERVER_OPTIONS)(
  "red-team hardening rejections",
  (it) => {
    it.effect("false_blocks and no_target_reply reject candidates, which are not created", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const base = yield* baseUrl
          const owner = yield* tenant(base)
          let up = true
          // Signs every answer with its canary, benign ones included: a canary-deny candidate would stop controls.
          const target = yield* stubTarget((_path, body) => {
            if (!up) return { status: 503, body: { error: "maintenance" } }
            const answer = demoAnswer(body)
            return { status: 200, body: { ...answer, reply: `${answer.reply} [GR-CANARY-7F3A9C]` } }
          })
          yield* createAgent(owner, agentYaml("leaky-bot", `${target.url}/chat`))
          const job = yield* dispatch(owner, {
            profile: "quick",
            target_url: `${target.url}/chat`,
            agent_id: "leaky-bot"
          })
          yield* waitForJob(owner, job.id)

          const result = yield* owner.api.redteam.hardenJob({ path: { id: job.id }, payload: {} })
          const canary = result.rejections.find((r) => r.substrate === "content:canary")
          expect(canary, JSON.stringify(result.rejections)).toBeDefined()
          expect(canary!.reason).toBe("false_blocks")
          expect(jsonAt(canary!.verify, "false_blocks")).toBe(jsonAt(canary!.verify, "control_total"))
          expect(jsonAt(canary!.verify, "passed")).toBe(false)
          expect(result.candidates.some((c) => c.substrate === "content:canary")).toBe(false)
          // Others still pass (e.g. the planted recipients).
          expect(result.candidates.some((c) => c.substrate.startsWith("param:send_email"))).toBe(true)

          up = false
          const down = yield* owner.api.redteam.hardenJob({ path: { id: job.id }, payload: {} })
          expect(down.candidates).toEqual([])
          expect(down.rejections.length).toBeGreaterThan(0)
          expect(down.rejections.every((r) => r.reason === "no_target_reply")).toBe(true)

          const policies = yield* owner.api.policies.listPolicies()
          const created = policies.policies.filter((p) => p.id.startsWith("redteam.leaky-bot."))
          expect(created.map((p) => p.id).sort()).toEqual(result.candidates.map((c) => c.policy.id).sort())
          expect(created.every((p) => p.enabled === false)).toBe(true)
        })
      )
    )

    it.effect("redacted: landed attacks whose replay gets no answer are no_target_reply, not unreachable", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const owner = yield* tenant(yield* baseUrl)
          yield* owner.api.settings.updateSettings({ payload: { data_handling_mode: "redacted" } })
          let up = true
          const target = yield* stubTarget((_path, body) =>
            up ? { status: 200, body: demoAnswer(body) } : { status: 503, body: { error: "maintenance" } }
          )
          yield* createAgent(owner, agentYaml("quiet-bot", `${target.url}/chat`))
          const job = yield* dispatch(owner, {
            profile: "quick",
            target_url: `${target.url}/chat`,
            agent_id: "quiet-bot"
          })
          yield* waitForJob(owner, job.id)
          const landed = yield* owner.api.redteam.listAttacks({ urlParams: { outcome: "landed", job_id: job.id } })
          expect(landed.records.length).toBeGreaterThan(0)

          up = false
          const result = yield* owner.api.redteam.hardenJob({ path: { id: job.id }, payload: {} })
          // Redacted records keep no matched values; without a replay none can be derived, yet a policy could
          // still express these attacks: the target's silence is the reason, as in raw_allowed.
          expect(result.unreachable).toEqual([])
          expect(result.candidates).toEqual([])
          expect(result.rejections.every((r) => r.reason === "no_target_reply")).toBe(true)
          const named = new Set(result.rejections.flatMap((r) => r.evidence_seqs))
          expect([...named].sort((a, b) => a - b)).toEqual(landed.records.map((r) => r.seq).sort((a, b) => a - b))
        })
      )
    )

    it.effect("a candidate's policy changed since it was created is policy_changed, not reported as verified", () =>
      Effect.gen(function* () {
        const owner = yield* tenant(yield* baseUrl)
        const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
        yield* waitForJob(owner, job.id)
        const harden = owner.api.redteam.hardenJob({ path: { id: job.id }, payload: {} })
        const first = yield* harden
        // The planted recipients' candidate: an any_of on the tool's param.
        const changed = first.candidates.find((c) => c.substrate.startsWith("param:send_email"))
        expect(changed, JSON.stringify(first.candidates.map((c) => c.substrate))).toBeDefined()
        const others = first.candidates.filter((c) => c !== changed)
        // A person weakens the created policy: it now matches a value no attack plants.
        const document = parse(changed!.policy.source_yaml) as { match: { value: unknown } }
        document.match.value = ["nobody@nowhere.example"]
        yield* owner.api.policies.replacePolicy({
          path: { id: PolicyId.make(changed!.policy.id) },
          payload: yamlBytes(stringify(document))
        })

        const second = yield* harden
        expect(second.candidates.map((c) => c.policy.id).sort()).toEqual(others.map((c) => c.policy.id).sort())
        expect(second.candidates.every((c) => c.operation === "reuse")).toBe(true)
        const rejection = second.rejections.find((r) => r.substrate === changed!.substrate)
        expect(rejection?.reason, JSON.stringify(second.rejections)).toBe("policy_changed")
        expect(rejection?.message).toContain(changed!.policy.id)
      })
    )
  }
)
