/**
 * Dispatch, jobs, cancel and attack records over HTTP, with targets on
 * loopback (allowlisted) speaking the target protocol and chat completions.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AgentId } from "../../src/catalog/Domain.js"
import { type AttackOutcome, JobId } from "../../src/redteam/Domain.js"
import { expectFailure, expectInvalid, jsonAt } from "../support/Api.js"
import { eventually } from "../support/Eventually.js"
import { call, expectValidation } from "../support/Raw.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import {
  agentYaml,
  createAgent,
  DEMO,
  demoAnswer,
  dispatch,
  listedJob,
  report,
  stubTarget,
  waitForJob
} from "./redteam-helpers.js"

type AttackQuery = {
  readonly attack?: string
  readonly outcome?: typeof AttackOutcome.Type
  readonly job_id?: string
  readonly limit?: number
  readonly cursor?: string
}

const server = testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1" })

layer(server, SERVER_OPTIONS)("red-team jobs over HTTP", (it) => {
  it.effect("dispatch validates profile, target and agent", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      // Bodies outside the contract (an unknown or missing profile) are sent raw.
      const post = (body: unknown) => call(base, "POST", "/v1/redteam/dispatch", { token: owner.jwt, body })

      const badProfile = expectValidation(yield* post({ profile: "extreme", target_url: DEMO }), "profile")
      expect(badProfile.message).toMatch(/quick.*standard.*deep/)
      expectValidation(yield* post({ target_url: DEMO }), "profile")
      yield* expectFailure(
        dispatch(owner, { profile: "quick", target_url: "https://agent.example.com/chat" }),
        400,
        "demo_target_only"
      )
      yield* expectFailure(
        dispatch(owner, { profile: "quick", target_url: DEMO, agent_id: "nobody" }),
        404,
        "agent_not_found"
      )

      yield* createAgent(owner, agentYaml("private-bot", "http://10.0.0.7/chat"))
      yield* expectFailure(
        dispatch(owner, { profile: "quick", target_url: "http://10.0.0.7/other", agent_id: "private-bot" }),
        400,
        "target_mismatch"
      )
      // Private addresses are refused unless allowlisted (only 127.0.0.1 is, in this suite).
      yield* expectFailure(
        dispatch(owner, { profile: "quick", target_url: "http://10.0.0.7/chat", agent_id: "private-bot" }),
        400,
        "target_not_allowed"
      )
      yield* createAgent(owner, agentYaml("ftp-bot", "ftp://127.0.0.1/chat"))
      yield* expectFailure(
        dispatch(owner, { profile: "quick", target_url: "ftp://127.0.0.1/chat", agent_id: "ftp-bot" }),
        400,
        "invalid_target_url"
      )
      yield* createAgent(owner, agentYaml("metadata-bot", "http://169.254.169.254/latest"))
      yield* expectFailure(
        dispatch(owner, { profile: "quick", target_url: "http://169.254.169.254/latest", agent_id: "metadata-bot" }),
        400,
        "target_not_allowed"
      )
    })
  )

  it.effect("a quick job against a target-protocol agent: sessions, traces, records and filters", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const target = yield* stubTarget((_path, body) => ({ status: 200, body: demoAnswer(body) }))
        yield* createAgent(owner, agentYaml("proto-bot", `${target.url}/chat`))
        const job = yield* dispatch(owner, {
          profile: "quick",
          target_url: `${target.url}/chat`,
          agent_id: "proto-bot"
        })
        expect(job.agent_id).toBe("proto-bot")
        const done = yield* waitForJob(owner, job.id)
        expect(done.job.attacks).toBe(20)
        // The protocol: messages and a session id per attack session.
        expect(jsonAt(target.requests[0]!.body, "messages", 0, "role")).toBe("user")
        expect(typeof jsonAt(target.requests[0]!.body, "session_id")).toBe("string")

        const session = done.sessions.find((s) => s.kind === "multi_turn")!
        expect(session.events.filter((e) => e.kind === "user_turn")).toHaveLength(3)
        expect(session.events.map((e) => e.seq)).toEqual(session.events.map((_, i) => i + 1))
        // Every target reply was decided by the pipeline, with a trace.
        const decision = session.events.find((e) => e.kind === "decision")!
        expect(decision.trace_id).toMatch(/^trc_/)
        const traces = yield* owner.api.traces.listTraces({ urlParams: { limit: 100 } })
        expect(traces.traces.length).toBeGreaterThan(20)

        // The profile checker denies "full refund" promises for this agent: those attacks are blocked, not landed.
        const r = yield* report(owner, job.id)
        const promise = r.findings.filter((f) => f.attack.includes("forbidden_promise"))
        expect(promise.length).toBeGreaterThan(0)
        expect(promise.every((f) => f.outcome === "blocked" && f.trace_id !== null)).toBe(true)
        expect(r.aggregates.landed).toBeGreaterThan(0)

        const landed = yield* owner.api.redteam.listAttacks({ urlParams: { outcome: "landed", job_id: job.id } })
        expect(landed.records.length).toBe(r.aggregates.landed)
        expect(landed.records.every((rec) => rec.outcome === "landed" && rec.landed && rec.profile === "quick")).toBe(
          true
        )
        const seqs = landed.records.map((rec) => rec.seq)
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b))
        const name = landed.records[0]!.attack
        const byName = yield* owner.api.redteam.listAttacks({ urlParams: { attack: name } })
        expect(byName.records.map((rec) => rec.attack)).toEqual([name])
        // An outcome outside the contract's enum is sent raw.
        expectValidation(yield* call(base, "GET", "/v1/redteam/attacks?outcome=maybe", { token: owner.jwt }), "outcome")

        // Another workspace sees none of it.
        const stranger = yield* tenant(base)
        yield* expectFailure(stranger.api.redteam.getJob({ path: { id: job.id }, urlParams: {} }), 404, "job_not_found")
        const none = yield* stranger.api.redteam.listAttacks({ urlParams: {} })
        expect(none.records).toEqual([])
        // Nor can it act on it by id: cancel, harden, filter by it, compare with it, or read the agent's plans.
        const path = { id: job.id }
        yield* expectFailure(stranger.api.redteam.cancelJob({ path }), 404, "job_not_found")
        yield* expectFailure(stranger.api.redteam.hardenJob({ path, payload: {} }), 404, "job_not_found")
        const filtered = yield* stranger.api.redteam.listAttacks({ urlParams: { job_id: job.id } })
        expect(filtered.records).toEqual([])
        const own = yield* dispatch(stranger, { profile: "quick", target_url: DEMO })
        yield* expectFailure(report(stranger, own.id, job.id), 404, "job_not_found")
        yield* expectFailure(
          stranger.api.redteam.listPlans({ path: { id: AgentId.make("proto-bot") } }),
          404,
          "agent_not_found"
        )
        expect((yield* listedJob(owner, job.id))!.status).toBe("completed")
      })
    )
  )

  it.effect("a tool call's arguments are kept once per session: in the reply event, not again in its decision", () =>
    Effect.gen(function* () {
      const owner = yield* tenant(yield* baseUrl)
      const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
      const done = yield* waitForJob(owner, job.id)
      let calls = 0
      for (const session of done.sessions) {
        let replyCalls: ReadonlyArray<unknown> = []
        for (const event of session.events) {
          if (event.kind === "agent_turn") {
            const toolCalls = jsonAt(event.payload, "tool_calls")
            replyCalls = Array.isArray(toolCalls) ? toolCalls : []
          }
          if (event.kind !== "tool_call") continue
          calls++
          expect(jsonAt(event.payload, "arguments")).toBeUndefined()
          // The decision names its call in the reply event before it, where the arguments are.
          const index = jsonAt(event.payload, "tool_call_index")
          expect(typeof index).toBe("number")
          const call = replyCalls[index as number]
          expect(jsonAt(call, "name")).toBe(jsonAt(event.payload, "tool"))
          expect(jsonAt(call, "arguments")).toBeDefined()
        }
      }
      expect(calls).toBeGreaterThan(0)
    })
  )

  it.effect("chat-completions targets are understood; a failing target is an error, never blocked", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const chat = yield* stubTarget((_path, body) => {
          const answer = demoAnswer(body)
          return {
            status: 200,
            body: {
              choices: [
                {
                  message: {
                    role: "assistant",
                    content: answer.reply,
                    tool_calls: answer.tool_calls.map((call) => ({
                      type: "function",
                      function: { name: call.name, arguments: JSON.stringify(call.arguments) }
                    }))
                  }
                }
              ]
            }
          }
        })
        const url = `${chat.url}/v1/chat/completions`
        yield* createAgent(owner, agentYaml("chat-bot", url))
        const job = yield* dispatch(owner, { profile: "quick", target_url: url, agent_id: "chat-bot" })
        yield* waitForJob(owner, job.id)
        expect(jsonAt(chat.requests[0]!.body, "model")).toBeDefined()
        const r = yield* report(owner, job.id)
        // Tool calls arrive as chat-completion function calls and are judged.
        expect(r.findings.some((f) => f.landed && f.category === "tool_parameter_injection")).toBe(true)

        const broken = yield* stubTarget(() => ({ status: 500, body: { error: "down" } }))
        yield* createAgent(owner, agentYaml("broken-bot", `${broken.url}/chat`))
        const failing = yield* dispatch(owner, {
          profile: "quick",
          target_url: `${broken.url}/chat`,
          agent_id: "broken-bot"
        })
        const done = yield* waitForJob(owner, failing.id)
        expect(done.job.blocked).toBe(0)
        const rb = yield* report(owner, failing.id)
        expect(rb.aggregates.errored).toBe(20)
        expect(rb.aggregates.blocked).toBe(0)
        expect(rb.aggregates.total).toBe(20)
        expect(rb.aggregates.success_rate).toBe(0)
        expect(rb.aggregates.risk_level).toBe("none")
        expect(done.sessions[0]!.error).toMatch(/HTTP 500/)
      })
    )
  )

  it.effect("cancel stops a running job: its attacks in flight are aborted and no more are sent", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        // The target never answers: the job's attacks stay in flight until the runner aborts them.
        const slow = yield* stubTarget(() => ({ status: 200, body: null, hold: true }))
        yield* createAgent(owner, agentYaml("slow-bot", `${slow.url}/chat`))
        const job = yield* dispatch(owner, {
          profile: "standard",
          target_url: `${slow.url}/chat`,
          agent_id: "slow-bot"
        })
        yield* eventually(
          Effect.suspend(() => (slow.open() > 0 ? Effect.void : Effect.fail("no attack in flight yet")))
        )
        const canceled = yield* owner.api.redteam.cancelJob({ path: { id: job.id } })
        expect(canceled.status).toBe("canceled")
        // The runner notices the cancel and interrupts the job: the target sees every call closed.
        yield* eventually(
          Effect.suspend(() => (slow.open() === 0 ? Effect.void : Effect.fail(`${slow.open()} in flight`)))
        )
        const requestsWhenStopped = slow.requests.length
        const first = (yield* listedJob(owner, job.id))!
        // Nothing is sent afterwards (a slow machine can only make this check weaker, never fail it).
        yield* Effect.sleep("1500 millis")
        const later = (yield* listedJob(owner, job.id))!
        expect(later.status).toBe("canceled")
        expect(later.attacks).toBe(first.attacks)
        expect(slow.requests.length).toBe(requestsWhenStopped)
        expect(later.attacks).toBeLessThan(99)
        // Cancelling a finished job changes nothing.
        const again = yield* owner.api.redteam.cancelJob({ path: { id: job.id } })
        expect(again.status).toBe("canceled")
        yield* expectFailure(
          owner.api.redteam.cancelJob({ path: { id: JobId.make("rtj_missing") } }),
          404,
          "job_not_found"
        )
        // Hardening waits for a finished job; a canceled one may be hardened.
        const queued = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
        // 409 job_not_finished, or the contract's 200 when it finished that fast.
        yield* owner.api.redteam
          .hardenJob({ path: { id: queued.id }, payload: {} })
          .pipe(Effect.catchTag("Conflict", (error) => Effect.sync(() => expect(error.code).toBe("job_not_finished"))))
      })
    )
  )

  it.effect("job and attack lists: limit 1..100 (0 is 400, above 100 clamps), agent filter, cursors", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const deep = yield* dispatch(owner, { profile: "deep", target_url: DEMO })
      const done = yield* waitForJob(owner, deep.id, "completed", "90 seconds")
      expect(done.job.attacks).toBeGreaterThan(100)
      yield* createAgent(owner, agentYaml("demo-bot", DEMO))
      const named = yield* dispatch(owner, { profile: "quick", target_url: DEMO, agent_id: "demo-bot" })

      // Limits outside the contract (below 1, not a number) are sent raw.
      const attacksRaw = (query: string) => call(base, "GET", `/v1/redteam/attacks?${query}`, { token: owner.jwt })
      const attacks = (query: AttackQuery) => owner.api.redteam.listAttacks({ urlParams: query })
      expectValidation(yield* attacksRaw("limit=0"), "limit")
      expectValidation(yield* attacksRaw("limit=-3"), "limit")
      // One reason, not also the optional field's `Expected undefined, actual "abc"`.
      expect(expectValidation(yield* attacksRaw("limit=abc"), "limit").details).toEqual([
        { path: "limit", message: 'Unable to decode "abc" into a number' }
      ])
      const capped = yield* attacks({ limit: 500, job_id: deep.id })
      expect(capped.records).toHaveLength(100)
      expect(capped.next_cursor).toBeDefined()
      const one = yield* attacks({ limit: 1, job_id: deep.id })
      expect(one.records).toHaveLength(1)
      expect(one.records[0]!.seq).toBe(1)
      const defaults = yield* attacks({ job_id: deep.id })
      expect(defaults.records).toHaveLength(50)
      let seen = 0
      let cursor: string | undefined = undefined
      do {
        const page: { readonly records: ReadonlyArray<unknown>; readonly next_cursor?: string | undefined } =
          yield* attacks({ limit: 100, job_id: deep.id, ...(cursor === undefined ? {} : { cursor }) })
        seen += page.records.length
        cursor = page.next_cursor
      } while (cursor !== undefined)
      expect(seen).toBe(done.job.attacks)
      yield* expectInvalid(attacks({ cursor: "not-a-cursor" }), "cursor")

      const jobs = (query: { readonly agent_id?: string; readonly limit?: number; readonly cursor?: string }) =>
        owner.api.redteam.listJobs({ urlParams: query })
      expectValidation(yield* call(base, "GET", "/v1/redteam/jobs?limit=0", { token: owner.jwt }), "limit")
      const all = yield* jobs({ limit: 1000 })
      expect(all.jobs.map((j) => j.id)).toEqual([named.id, deep.id])
      const first = yield* jobs({ limit: 1 })
      expect(first.jobs.map((j) => j.id)).toEqual([named.id])
      const rest = yield* jobs({ limit: 1, ...(first.next_cursor === undefined ? {} : { cursor: first.next_cursor }) })
      expect(rest.jobs.map((j) => j.id)).toEqual([deep.id])
      const filtered = yield* jobs({ agent_id: "demo-bot" })
      expect(filtered.jobs.map((j) => j.id)).toEqual([named.id])
    })
  )
})
