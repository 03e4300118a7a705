/**
 * Dispatch, jobs, cancel and attack records over HTTP, with targets on
 * loopback (allowlisted) speaking the target protocol and chat completions.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectError, expectStatus, expectValidation, SERVER_OPTIONS, tenant } from "../identity/http-helpers.js"
import { eventually } from "../support/Eventually.js"
import { baseUrl, testServer } from "../support/TestServer.js"
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

const server = testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1" })

layer(server, SERVER_OPTIONS)("red-team jobs over HTTP", (it) => {
  it.effect("dispatch validates profile, target and agent", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const post = (body: unknown) => call(base, "POST", "/v1/redteam/dispatch", { token: owner.jwt, body })

      const badProfile = expectValidation(yield* post({ profile: "extreme", target_url: DEMO }), "profile")
      expect(badProfile.message).toMatch(/quick.*standard.*deep/)
      expectValidation(yield* post({ target_url: DEMO }), "profile")
      expectError(yield* post({ profile: "quick", target_url: "https://agent.example.com/chat" }), 400, "demo_target_only")
      expectError(yield* post({ profile: "quick", target_url: DEMO, agent_id: "nobody" }), 404, "agent_not_found")

      yield* createAgent(base, owner, agentYaml("private-bot", "http://10.0.0.7/chat"))
      expectError(
        yield* post({ profile: "quick", target_url: "http://10.0.0.7/other", agent_id: "private-bot" }),
        400,
        "target_mismatch"
      )
      // Private addresses are refused unless allowlisted (only 127.0.0.1 is, in this suite).
      expectError(
        yield* post({ profile: "quick", target_url: "http://10.0.0.7/chat", agent_id: "private-bot" }),
        400,
        "target_not_allowed"
      )
      yield* createAgent(base, owner, agentYaml("ftp-bot", "ftp://127.0.0.1/chat"))
      expectError(yield* post({ profile: "quick", target_url: "ftp://127.0.0.1/chat", agent_id: "ftp-bot" }), 400, "invalid_target_url")
      yield* createAgent(base, owner, agentYaml("metadata-bot", "http://169.254.169.254/latest"))
      expectError(
        yield* post({ profile: "quick", target_url: "http://169.254.169.254/latest", agent_id: "metadata-bot" }),
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
        yield* createAgent(base, owner, agentYaml("proto-bot", `${target.url}/chat`))
        const job = yield* dispatch(base, owner, { profile: "quick", target_url: `${target.url}/chat`, agent_id: "proto-bot" })
        expect(job.agent_id).toBe("proto-bot")
        const done = yield* waitForJob(base, owner, job.id)
        expect(done.job.attacks).toBe(20)
        // The protocol: messages and a session id per attack session.
        expect(target.requests[0]!.body.messages[0].role).toBe("user")
        expect(typeof target.requests[0]!.body.session_id).toBe("string")

        const session = done.sessions.find((s) => s["kind"] === "multi_turn") as any
        expect(session.events.filter((e: any) => e.kind === "user_turn")).toHaveLength(3)
        expect(session.events.map((e: any) => e.seq)).toEqual(session.events.map((_: unknown, i: number) => i + 1))
        // Every target reply was decided by the pipeline, with a trace.
        const decision = session.events.find((e: any) => e.kind === "decision")
        expect(decision.trace_id).toMatch(/^trc_/)
        const traces = expectStatus(yield* call(base, "GET", `/v1/traces?limit=100`, { token: owner.jwt }), 200)
        expect(traces.traces.length).toBeGreaterThan(20)

        // The profile checker denies "full refund" promises for this agent: those attacks are blocked, not landed.
        const r = yield* report(base, owner, job.id)
        const promise = r.findings.filter((f) => f.attack.includes("forbidden_promise"))
        expect(promise.length).toBeGreaterThan(0)
        expect(promise.every((f) => f.outcome === "blocked" && f.trace_id !== null)).toBe(true)
        expect(r.aggregates.landed).toBeGreaterThan(0)

        const landed = expectStatus(
          yield* call(base, "GET", `/v1/redteam/attacks?outcome=landed&job_id=${job.id}`, { token: owner.jwt }),
          200
        )
        expect(landed.records.length).toBe(r.aggregates.landed)
        expect(landed.records.every((rec: any) => rec.outcome === "landed" && rec.landed && rec.profile === "quick")).toBe(true)
        const seqs = landed.records.map((rec: any) => rec.seq)
        expect(seqs).toEqual([...seqs].sort((a: number, b: number) => a - b))
        const name = landed.records[0].attack
        const byName = expectStatus(
          yield* call(base, "GET", `/v1/redteam/attacks?attack=${encodeURIComponent(name)}`, { token: owner.jwt }),
          200
        )
        expect(byName.records.map((rec: any) => rec.attack)).toEqual([name])
        expectValidation(yield* call(base, "GET", "/v1/redteam/attacks?outcome=maybe", { token: owner.jwt }), "outcome")

        // Another workspace sees none of it.
        const stranger = yield* tenant(base)
        expectError(yield* call(base, "GET", `/v1/redteam/jobs/${job.id}`, { token: stranger.jwt }), 404, "job_not_found")
        const none = expectStatus(yield* call(base, "GET", "/v1/redteam/attacks", { token: stranger.jwt }), 200)
        expect(none.records).toEqual([])
      })
    )
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
        yield* createAgent(base, owner, agentYaml("chat-bot", url))
        const job = yield* dispatch(base, owner, { profile: "quick", target_url: url, agent_id: "chat-bot" })
        yield* waitForJob(base, owner, job.id)
        expect(chat.requests[0]!.body.model).toBeDefined()
        const r = yield* report(base, owner, job.id)
        // Tool calls arrive as chat-completion function calls and are judged.
        expect(r.findings.some((f) => f.landed && f.category === "tool_parameter_injection")).toBe(true)

        const broken = yield* stubTarget(() => ({ status: 500, body: { error: "down" } }))
        yield* createAgent(base, owner, agentYaml("broken-bot", `${broken.url}/chat`))
        const failing = yield* dispatch(base, owner, { profile: "quick", target_url: `${broken.url}/chat`, agent_id: "broken-bot" })
        const done = yield* waitForJob(base, owner, failing.id)
        expect(done.job.blocked).toBe(0)
        const rb = yield* report(base, owner, failing.id)
        expect(rb.aggregates.errored).toBe(20)
        expect(rb.aggregates.blocked).toBe(0)
        expect(rb.aggregates.total).toBe(20)
        expect(rb.aggregates.success_rate).toBe(0)
        expect(rb.aggregates.risk_level).toBe("none")
        expect((done.sessions[0] as any).error).toMatch(/HTTP 500/)
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
        yield* createAgent(base, owner, agentYaml("slow-bot", `${slow.url}/chat`))
        const job = yield* dispatch(base, owner, { profile: "standard", target_url: `${slow.url}/chat`, agent_id: "slow-bot" })
        yield* eventually(Effect.suspend(() => (slow.open() > 0 ? Effect.void : Effect.fail("no attack in flight yet"))))
        const canceled = expectStatus(yield* call(base, "POST", `/v1/redteam/jobs/${job.id}/cancel`, { token: owner.jwt }), 200)
        expect(canceled.status).toBe("canceled")
        // The runner notices the cancel and interrupts the job: the target sees every call closed.
        yield* eventually(Effect.suspend(() => (slow.open() === 0 ? Effect.void : Effect.fail(`${slow.open()} in flight`))))
        const requestsWhenStopped = slow.requests.length
        const first = (yield* listedJob(base, owner, job.id))!
        // Nothing is sent afterwards (a slow machine can only make this check weaker, never fail it).
        yield* Effect.sleep("1500 millis")
        const later = (yield* listedJob(base, owner, job.id))!
        expect(later.status).toBe("canceled")
        expect(later.attacks).toBe(first.attacks)
        expect(slow.requests.length).toBe(requestsWhenStopped)
        expect(later.attacks).toBeLessThan(99)
        // Cancelling a finished job changes nothing.
        const again = expectStatus(yield* call(base, "POST", `/v1/redteam/jobs/${job.id}/cancel`, { token: owner.jwt }), 200)
        expect(again.status).toBe("canceled")
        expectError(yield* call(base, "POST", `/v1/redteam/jobs/rtj_missing/cancel`, { token: owner.jwt }), 404, "job_not_found")
        // Hardening waits for a finished job; a canceled one may be hardened.
        const queued = yield* dispatch(base, owner, { profile: "quick", target_url: DEMO })
        const early = yield* call(base, "POST", `/v1/redteam/jobs/${queued.id}/harden`, { token: owner.jwt, body: {} })
        if (early.status === 409) expectError(early, 409, "job_not_finished")
        else expect(early.status).toBe(200) // it finished that fast
      })
    )
  )

  it.effect("job and attack lists: limit 1..100 (0 is 400, above 100 clamps), agent filter, cursors", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const deep = yield* dispatch(base, owner, { profile: "deep", target_url: DEMO })
      const done = yield* waitForJob(base, owner, deep.id, "completed", "90 seconds")
      expect(done.job.attacks).toBeGreaterThan(100)
      yield* createAgent(base, owner, agentYaml("demo-bot", DEMO))
      const named = yield* dispatch(base, owner, { profile: "quick", target_url: DEMO, agent_id: "demo-bot" })

      const attacks = (query: string) => call(base, "GET", `/v1/redteam/attacks?${query}`, { token: owner.jwt })
      expectValidation(yield* attacks("limit=0"), "limit")
      expectValidation(yield* attacks("limit=-3"), "limit")
      expectValidation(yield* attacks("limit=abc"), "limit")
      const capped = expectStatus(yield* attacks(`limit=500&job_id=${deep.id}`), 200)
      expect(capped.records).toHaveLength(100)
      expect(capped.next_cursor).toBeDefined()
      const one = expectStatus(yield* attacks(`limit=1&job_id=${deep.id}`), 200)
      expect(one.records).toHaveLength(1)
      expect(one.records[0].seq).toBe(1)
      const defaults = expectStatus(yield* attacks(`job_id=${deep.id}`), 200)
      expect(defaults.records).toHaveLength(50)
      let seen = 0
      let cursor: string | undefined = undefined
      do {
        const page: any = expectStatus(
          yield* attacks(`limit=100&job_id=${deep.id}${cursor === undefined ? "" : `&cursor=${cursor}`}`),
          200
        )
        seen += page.records.length
        cursor = page.next_cursor
      } while (cursor !== undefined)
      expect(seen).toBe(done.job.attacks)
      expectValidation(yield* attacks("cursor=not-a-cursor"), "cursor")

      const jobs = (query: string) => call(base, "GET", `/v1/redteam/jobs?${query}`, { token: owner.jwt })
      expectValidation(yield* jobs("limit=0"), "limit")
      const all = expectStatus(yield* jobs("limit=1000"), 200)
      expect(all.jobs.map((j: any) => j.id)).toEqual([named.id, deep.id])
      const first = expectStatus(yield* jobs("limit=1"), 200)
      expect(first.jobs.map((j: any) => j.id)).toEqual([named.id])
      const rest = expectStatus(yield* jobs(`limit=1&cursor=${first.next_cursor}`), 200)
      expect(rest.jobs.map((j: any) => j.id)).toEqual([deep.id])
      const filtered = expectStatus(yield* jobs("agent_id=demo-bot"), 200)
      expect(filtered.jobs.map((j: any) => j.id)).toEqual([named.id])
    })
  )
})
