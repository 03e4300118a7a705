/**
 * Hardening runs in the request, against the live target, so it is bounded:
 * - its replays get REDTEAM_HARDEN_REPLAY_SECONDS; a target that stops answering rejects the candidates with
 *   `no_target_reply` then, instead of holding the request for TARGET_TIMEOUT per replay (minutes, or hours
 *   for a deep job);
 * - one hardening of a job at a time: a second request while one runs is 409 `hardening_in_progress`, not a
 *   second full replay against the target; a client leaving ends its hardening and frees the job at once;
 * - at most REDTEAM_HARDEN_REPLAY_BYTES of answers are kept, and a workspace hardens MAX_HARDENINGS_PER_WORKSPACE
 *   jobs at once;
 * - every replayed conversation has a fresh session id, as each attack of the job had.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import type { JobId } from "../../src/redteam/Domain.js"
import { MAX_HARDENINGS_PER_WORKSPACE } from "../../src/redteam/RedteamPolicies.js"
import { expectFailure, jsonAt } from "../support/Api.js"
import { eventually } from "../support/Eventually.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { agentYaml, createAgent, demoAnswer, dispatch, stubTarget, waitForJob } from "./redteam-helpers.js"

/** A demo-like target holding every request (never answering) once `hold` is set. */
const holdingTarget = Effect.gen(function* () {
  const state = { hold: false, pad: 0 }
  const target = yield* stubTarget((_path, body) => {
    if (state.hold) return { status: 200, body: null, hold: true }
    const answer = demoAnswer(body)
    return { status: 200, body: { ...answer, reply: `${answer.reply} ${"x".repeat(state.pad)}` } }
  })
  return { state, target }
})

/**
 * A demo-like target, and its finished job. Once `hold` is set the target holds every request (never answers);
 * with `pad`, its replies carry that many more bytes.
 */
const heldTargetWithJob = (agentId: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(yield* baseUrl)
    const { state, target } = yield* holdingTarget
    yield* createAgent(owner, agentYaml(agentId, `${target.url}/chat`))
    const job = yield* dispatch(owner, { profile: "quick", target_url: `${target.url}/chat`, agent_id: agentId })
    const done = yield* waitForJob(owner, job.id)
    expect(done.job.landed).toBeGreaterThan(0)
    const harden = owner.api.redteam.hardenJob({ path: { id: job.id }, payload: {} })
    return { owner, state, target, job: done.job, harden }
  })

const targetIdle = (target: { open: () => number }) =>
  eventually(
    Effect.suspend(() =>
      target.open() === 0 ? Effect.void : Effect.fail(new Error(`${target.open()} requests still open`))
    ),
    "30 seconds"
  )

layer(testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1", REDTEAM_HARDEN_REPLAY_SECONDS: "2" }), SERVER_OPTIONS)(
  "red-team hardening time limit",
  (it) => {
    it.effect("a target that stops answering rejects the candidates with no_target_reply at the time limit", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { harden, owner, state, target } = yield* heldTargetWithJob("held-bot")
          state.hold = true
          const result = yield* harden
          expect(result.candidates).toEqual([])
          expect(result.rejections.length).toBeGreaterThan(0)
          for (const rejection of result.rejections) {
            expect(rejection.reason).toBe("no_target_reply")
            expect(rejection.message).toContain("within the hardening time limit")
          }
          // The replays still waiting were abandoned with the request, not left holding the target.
          yield* targetIdle(target)
          const policies = yield* owner.api.policies.listPolicies()
          expect(policies.policies.filter((p) => p.id.startsWith("redteam.held-bot."))).toEqual([])
        })
      )
    )
  }
)

layer(
  testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1", REDTEAM_HARDEN_REPLAY_BYTES: String(1024 * 1024) }),
  SERVER_OPTIONS
)("red-team hardening: bytes kept, sessions, one at a time", (it) => {
  it.effect("past REDTEAM_HARDEN_REPLAY_BYTES of answers no more replays are made; the rest is no_target_reply", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { harden, job, state, target } = yield* heldTargetWithJob("wordy-bot")
        state.pad = 100_000
        const before = target.requests.length
        const result = yield* harden
        const cut = result.rejections.filter((r) => r.message.includes("within the hardening's limit of answer bytes"))
        expect(cut.length, JSON.stringify(result.rejections)).toBeGreaterThan(0)
        expect(cut.every((r) => r.reason === "no_target_reply")).toBe(true)
        // About 1 MiB of 100 KB answers (and those in flight), not every landed attack's five replays.
        const sent = target.requests.length - before
        expect(sent).toBeLessThan(20)
        expect(job.landed * 5).toBeGreaterThan(20)
      })
    )
  )

  it.effect("each replayed conversation has a session of its own, never one an earlier hardening used", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { harden, target } = yield* heldTargetWithJob("session-bot")
        const sessionsOf = (from: number, to: number) => {
          const ids = target.requests.slice(from, to).map((request) => jsonAt(request.body, "session_id"))
          expect(ids.every((id) => typeof id === "string" && id.startsWith("rts_replay_"))).toBe(true)
          return new Set(ids)
        }
        const start = target.requests.length
        yield* harden
        const middle = target.requests.length
        yield* harden
        const first = sessionsOf(start, middle)
        const second = sessionsOf(middle, target.requests.length)
        expect([...second].filter((id) => first.has(id))).toEqual([])
        // A multi-turn replay keeps one session across its turns: fewer sessions than requests.
        expect(first.size).toBeLessThan(middle - start)
      })
    )
  )

  it.effect("a workspace hardens at most MAX_HARDENINGS_PER_WORKSPACE jobs at once; past them 429", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const owner = yield* tenant(yield* baseUrl)
        const { state, target } = yield* holdingTarget
        // One agent per job, each at its own path of the target, so its replays are told apart.
        const paths = Array.from({ length: MAX_HARDENINGS_PER_WORKSPACE + 1 }, (_, i) => `/agent-${i}`)
        const jobs: Array<JobId> = []
        for (const [i, path] of paths.entries()) {
          yield* createAgent(owner, agentYaml(`many-${i}`, `${target.url}${path}`))
          const job = yield* dispatch(owner, {
            profile: "quick",
            target_url: `${target.url}${path}`,
            agent_id: `many-${i}`
          })
          jobs.push(job.id)
        }
        for (const id of jobs) yield* waitForJob(owner, id)
        const harden = (id: JobId) => owner.api.redteam.hardenJob({ path: { id }, payload: {} })

        state.hold = true
        const sent = target.requests.length
        const running = []
        for (const job of jobs.slice(0, MAX_HARDENINGS_PER_WORKSPACE)) running.push(yield* Effect.fork(harden(job)))
        yield* eventually(
          Effect.suspend(() => {
            const replayed = new Set(target.requests.slice(sent).map((request) => request.path))
            return paths.slice(0, MAX_HARDENINGS_PER_WORKSPACE).every((path) => replayed.has(path))
              ? Effect.void
              : Effect.fail(new Error("not every hardening replays yet"))
          }),
          "30 seconds"
        )
        const refused = yield* expectFailure(harden(jobs.at(-1)!), 429, "too_many_hardenings")
        expect(refused.message).toContain(`already hardens ${MAX_HARDENINGS_PER_WORKSPACE} jobs`)

        // Once they end, the workspace may harden again.
        for (const fiber of running) yield* Fiber.interrupt(fiber)
        yield* targetIdle(target)
        state.hold = false
        const result = yield* harden(jobs.at(-1)!)
        expect(result.candidates.length).toBeGreaterThan(0)
      })
    )
  )

  it.effect("a second hardening of a job while one runs is 409; a client leaving frees the job", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { harden, state, target } = yield* heldTargetWithJob("busy-bot")
        state.hold = true
        const first = yield* Effect.fork(harden)
        yield* eventually(
          Effect.suspend(() => (target.open() > 0 ? Effect.void : Effect.fail(new Error("no replay yet")))),
          "30 seconds"
        )
        yield* expectFailure(harden, 409, "hardening_in_progress")

        // The first client leaves: its replays stop and the job may be hardened again.
        yield* Fiber.interrupt(first)
        yield* targetIdle(target)
        state.hold = false
        const again = yield* harden
        expect(again.candidates.length).toBeGreaterThan(0)
        expect(again.candidates.every((c) => c.verify.passed)).toBe(true)
      })
    )
  )
})
