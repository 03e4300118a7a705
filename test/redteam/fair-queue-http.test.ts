/**
 * The red-team queue is fair across workspaces (docs/redteam.md#queue-fairness):
 * a workspace with a backlog does not make another workspace's job wait behind
 * all of it, and a workspace past MAX_REDTEAM_JOBS_PER_WORKSPACE queued or
 * running jobs is answered 429 `too_many_jobs`, storing nothing, until one ends.
 * Jobs held running by a target that never answers; no sleeps.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { JobId } from "../../src/redteam/Domain.js"
import { MAX_CONCURRENT_JOBS } from "../../src/redteam/JobRunner.js"
import { expectFailure } from "../support/Api.js"
import { eventually } from "../support/Eventually.js"
import { call } from "../support/Raw.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { agentYaml, createAgent, DEMO, dispatch, stubTarget } from "./redteam-helpers.js"

const CAP = 4
const server = testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1", MAX_REDTEAM_JOBS_PER_WORKSPACE: String(CAP) })

const statuses = (owner: Tenant) =>
  Effect.map(
    owner.api.redteam.listJobs({ urlParams: { limit: 100 } }),
    (page) => new Map(page.jobs.map((job) => [job.id as string, job.status]))
  )

const cancel = (owner: Tenant, id: string) => owner.api.redteam.cancelJob({ path: { id: JobId.make(id) } })

/** An agent whose target never answers: its jobs stay running until canceled. */
const holdingAgent = (owner: Tenant, url: string) =>
  Effect.as(createAgent(owner, agentYaml("held-bot", `${url}/chat`)), {
    profile: "quick" as const,
    target_url: `${url}/chat`,
    agent_id: "held-bot"
  })

layer(server, SERVER_OPTIONS)("red-team queue fairness", (it) => {
  it.effect("a freed slot goes to a waiting workspace's first job, not to the next of a backlog", () =>
    Effect.scoped(
      Effect.gen(function* () {
        expect(MAX_CONCURRENT_JOBS).toBe(2)
        const base = yield* baseUrl
        const busy = yield* tenant(base)
        const other = yield* tenant(base)
        const held = yield* stubTarget(() => ({ status: 200, body: null, hold: true }))
        const body = yield* holdingAgent(busy, held.url)
        const backlog: Array<string> = []
        for (let i = 0; i < CAP; i++) backlog.push((yield* dispatch(busy, body)).id)
        // The worker's two slots are taken by the busy workspace's first two jobs.
        yield* eventually(
          Effect.flatMap(statuses(busy), (now) =>
            backlog.slice(0, 2).every((id) => now.get(id) === "running") ? Effect.void : Effect.fail("not running yet")
          )
        )
        const waiting = yield* dispatch(other, { profile: "quick", target_url: DEMO })
        expect((yield* statuses(other)).get(waiting.id)).toBe("queued")

        yield* cancel(busy, backlog[0]!)
        // The freed slot is claimed by one of the queued jobs: the other workspace's, while the backlog waits.
        const claimed = yield* eventually(
          Effect.gen(function* () {
            const mine = yield* statuses(other)
            const theirs = yield* statuses(busy)
            const started = [waiting.id, backlog[2]!, backlog[3]!].filter(
              (id) => (mine.get(id) ?? theirs.get(id)) !== "queued"
            )
            return started.length > 0 ? { started, theirs } : yield* Effect.fail("no queued job claimed yet")
          })
        )
        expect(claimed.started).toEqual([waiting.id])
        expect(claimed.theirs.get(backlog[2]!)).toBe("queued")
        expect(claimed.theirs.get(backlog[3]!)).toBe("queued")
        for (const id of backlog) yield* cancel(busy, id)
      })
    )
  )

  it.effect("past the cap of queued and running jobs a dispatch is 429 too_many_jobs; a job ending frees room", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const held = yield* stubTarget(() => ({ status: 200, body: null, hold: true }))
        const body = yield* holdingAgent(owner, held.url)
        const jobs: Array<string> = []
        for (let i = 0; i < CAP; i++) jobs.push((yield* dispatch(owner, body)).id)

        const refused = yield* expectFailure(dispatch(owner, body), 429, "too_many_jobs")
        expect(refused.message).toContain(`${CAP} red-team jobs`)
        const raw = yield* call(base, "POST", "/v1/redteam/dispatch", { token: owner.jwt, body })
        expect(raw.status).toBe(429)
        expect(raw.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/)
        // Nothing was stored, and the queued and running jobs are as they were.
        const listed = yield* statuses(owner)
        expect([...listed.keys()].sort()).toEqual([...jobs].sort())
        expect([...listed.values()].every((status) => status === "queued" || status === "running")).toBe(true)
        // Another workspace is not limited by this one's jobs.
        const other = yield* tenant(base)
        yield* dispatch(other, { profile: "quick", target_url: DEMO })

        // A job that ends (here canceled) leaves room for one more.
        yield* cancel(owner, jobs[0]!)
        const next = yield* dispatch(owner, body)
        expect(next.status).toBe("queued")
        yield* expectFailure(dispatch(owner, body), 429, "too_many_jobs")
        for (const id of [...jobs, next.id]) yield* cancel(owner, id)
      })
    )
  )
})
