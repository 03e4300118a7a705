/** Helpers of the impact replay suites: starting a replay over the typed client and waiting for its result. */
import { Effect } from "effect"
import type { ImpactRequest } from "../../src/impact/Domain.js"
import { ImpactJobId } from "../../src/impact/Domain.js"
import type { Caller } from "../support/Api.js"
import { eventually } from "../support/Eventually.js"

/** `POST /v1/policies/impact` (202). */
export const startImpact = (owner: Caller, body: ImpactRequest) =>
  owner.api.policyImpact.startPolicyImpact({ payload: body })

/** `GET /v1/policies/impact/{id}`. */
export const getImpact = (owner: Caller, id: string) =>
  owner.api.policyImpact.getPolicyImpact({ path: { id: ImpactJobId.make(id) } })

/** Polls the job until it is completed (failing fast on `failed`), then answers it. */
export const waitForImpact = (owner: Caller, id: string) =>
  eventually(
    Effect.flatMap(getImpact(owner, id), (job) =>
      job.status === "completed"
        ? Effect.succeed(job)
        : job.status === "failed"
          ? Effect.die(new Error(`impact job ${id} failed: ${job.error}`))
          : Effect.fail(new Error(`impact job ${id} is ${job.status}`))
    ),
    "60 seconds"
  )

/** Starts a replay and answers it completed. */
export const replay = (owner: Caller, body: ImpactRequest) =>
  Effect.flatMap(startImpact(owner, body), (job) => waitForImpact(owner, job.id))

/** A window around now: from a minute ago to a minute ahead. */
export const aroundNow = () => ({
  start: new Date(Date.now() - 60_000).toISOString(),
  end: new Date(Date.now() + 60_000).toISOString()
})
