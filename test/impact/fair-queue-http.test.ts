/**
 * The impact replay queue is fair across workspaces (docs/policies.md#impact-replay):
 * jobs queued over HTTP on an API without stream workers, claimed here through
 * the runner's own repository calls (several "workers" by id), so the claim
 * order is exact. A workspace with a backlog gets one replay running at a
 * time, a waiting workspace is served before the backlog's next job, and
 * past MAX_IMPACT_JOBS_PER_WORKSPACE queued or running jobs a start is 429
 * `too_many_jobs`, storing nothing, until one finishes.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { ImpactRepo } from "../../src/impact/Repo.js"
import { MAX_RUNNING_PER_WORKSPACE } from "../../src/impact/Runner.js"
import { AppConfig } from "../../src/platform/Config.js"
import { SqlLive } from "../../src/platform/Database.js"
import { expectFailure } from "../support/Api.js"
import { queryDatabase } from "../support/Database.js"
import { call } from "../support/Raw.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { configLayer, settingsFor } from "../support/TestPlatform.js"
import { apiServerWithDatabase, baseUrl, SERVER_OPTIONS, TestDatabaseUrl } from "../support/TestServer.js"
import { aroundNow, getImpact, startImpact } from "./impact-helpers.js"

const CAP = 3

/** The impact repository over the suite's database, as a worker process holds it. */
const workerRepo = (url: string) =>
  Effect.map(
    Layer.build(
      ImpactRepo.Default.pipe(
        Layer.provide(SqlLive),
        Layer.provide(AppConfig.Default),
        Layer.provide(configLayer(settingsFor("database", url)))
      )
    ),
    (context) => Context.get(context, ImpactRepo)
  )

const start = (owner: Tenant) => Effect.map(startImpact(owner, aroundNow()), (job) => job.id as string)

layer(apiServerWithDatabase("database", { MAX_IMPACT_JOBS_PER_WORKSPACE: String(CAP) }), SERVER_OPTIONS)(
  "impact replay queue fairness",
  (it) => {
    it.scoped("claims serve a waiting workspace before a backlog's next job; the cap answers 429 until one ends", () =>
      Effect.gen(function* () {
        expect(MAX_RUNNING_PER_WORKSPACE).toBe(1)
        const base = yield* baseUrl
        const repo = yield* workerRepo(yield* TestDatabaseUrl)
        const claim = (workerId: string) =>
          Effect.map(
            repo.claim(workerId, MAX_RUNNING_PER_WORKSPACE),
            Option.map((job) => job.id)
          )
        const complete = (workerId: string, id: string) => repo.complete(workerId, id, 0, {}, "digest")
        const busy = yield* tenant(base)
        const other = yield* tenant(base)

        const [a1, a2, a3] = [yield* start(busy), yield* start(busy), yield* start(busy)]
        const b1 = yield* start(other)
        // The busy workspace is at its cap: refused with Retry-After, and nothing stored.
        const refused = yield* expectFailure(startImpact(busy, aroundNow()), 429, "too_many_jobs")
        expect(refused.message).toContain(`${CAP} impact replays`)
        const raw = yield* call(base, "POST", "/v1/policies/impact", { token: busy.jwt, body: aroundNow() })
        expect(raw.status).toBe(429)
        expect(raw.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/)
        const stored = yield* queryDatabase<{ id: string }>(
          yield* TestDatabaseUrl,
          `select id from impact_jobs where workspace_id = $1 order by id`,
          [busy.workspaceId]
        )
        expect(stored.map((row) => row.id)).toEqual([a1, a2, a3].sort())

        // Oldest first while no workspace runs anything; then the busy one is at one running, so the other's job.
        expect(yield* claim("worker-1")).toEqual(Option.some(a1))
        expect(yield* claim("worker-2")).toEqual(Option.some(b1))
        expect(yield* claim("worker-3")).toEqual(Option.none())
        expect((yield* getImpact(busy, a2!)).status).toBe("queued")

        // Finishing a job frees room under the cap.
        yield* complete("worker-1", a1!)
        yield* complete("worker-2", b1)
        const a4 = yield* start(busy)
        const b2 = yield* start(other)
        // Neither runs anything: the workspace whose last replay started longest ago goes first (busy: a1 before b1)...
        expect(yield* claim("worker-1")).toEqual(Option.some(a2))
        yield* complete("worker-1", a2!)
        // ...and now the other, although a3 was queued before b2.
        expect(yield* claim("worker-1")).toEqual(Option.some(b2))

        // Instances claiming at once: the busy workspace still gets one running job, never two.
        const claimed = yield* Effect.all([claim("worker-2"), claim("worker-3"), claim("worker-4")], {
          concurrency: "unbounded"
        })
        expect(claimed.filter(Option.isSome).map((id) => id.value)).toEqual([a3])
        expect((yield* getImpact(busy, a4)).status).toBe("queued")
      })
    )
  }
)
