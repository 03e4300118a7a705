/**
 * User regexes cannot stall the service (issue 15, item 1): a policy with a pattern that makes a
 * backtracking engine take minutes is decided at once while `/healthz` keeps answering, and text
 * over `MAX_MATCH_CONTENT_BYTES` is refused whole with 413 on the direct, lane and pipeline paths.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt, expectFailure } from "../support/Api.js"
import { bothWays, post } from "../support/LaneRequests.js"
import { sample, scrape } from "../support/Metrics.js"
import { createKey, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { createAgent, createPolicy, eventBody, propose, reply } from "../support/Events.js"

const METRICS_TOKEN = "regex-limits-metrics-token-0123456789abc"
const AGENT = "support-bot"
const CAP = 256 * 1024

const directCalls = (base: string) =>
  Effect.map(
    scrape(base, METRICS_TOKEN),
    (text) => sample(text, "guardrail_http_direct_requests_total", { route: "/v1/events" }) ?? 0
  )

/** A tenant with the agent, the pattern as a deny policy, and a warm runtime key. */
const redosTenant = Effect.gen(function* () {
  const base = yield* baseUrl
  const owner = yield* tenant(base)
  yield* createAgent(base, owner, AGENT)
  yield* createPolicy(base, owner, "dot-star-chain", { type: "regex", value: ".*a.*a.*a.*b" })
  const key = yield* createKey(owner)
  yield* propose(base, owner, AGENT, reply("warm up"), { token: key.plaintext_key })
  return { base, owner, token: key.plaintext_key }
})

layer(testServer("database", { METRICS_TOKEN }), SERVER_OPTIONS)("user regexes and the matched-content cap", (it) => {
  it.effect("a catastrophic-for-backtracking policy decides 300 and 100,000 characters while /healthz answers", () =>
    Effect.gen(function* () {
      const { base, owner, token } = yield* redosTenant
      const anonymous = yield* clientAt(base)
      const before = yield* directCalls(base)
      for (const content of ["a".repeat(300), "a".repeat(100_000)]) {
        // The decision and a health check in flight together: both must come back (the health check with its 200).
        const [decision] = yield* Effect.all(
          [propose(base, owner, AGENT, reply(content), { token }), anonymous.system.healthz()],
          { concurrency: 2 }
        )
        expect(decision.effect).toBe("permit")
      }
      const denied = yield* propose(base, owner, AGENT, reply(`${"a".repeat(100_000)}b`), { token })
      expect(denied.effect).toBe("deny")
      expect(denied.findings.map((finding) => finding.policy_id)).toContain("dot-star-chain")
      // These were decided on the direct path (warm key and snapshot).
      expect((yield* directCalls(base)) - before).toBe(3)
    })
  )

  it.effect("content over the cap is 413 content_too_large on the lane and the pipeline, never partly matched", () =>
    Effect.gen(function* () {
      const { base, owner, token } = yield* redosTenant
      yield* createPolicy(base, owner, "no-secret", { value: "top secret" })
      // The denied phrase sits past the cap: a prefix match would permit this event.
      const padded = `${"x".repeat(CAP)} top secret`
      const over = JSON.stringify(eventBody(owner, AGENT, reply(padded)))
      const before = yield* directCalls(base)
      for (const answer of yield* bothWays(base, "/v1/events", over, token)) {
        expect(answer.status).toBe(413)
        expect(answer.body).toMatchObject({
          error: { code: "content_too_large", details: [{ path: "action.content" }] }
        })
      }
      // The direct path declined both; the JWT (router) path answers the same.
      expect((yield* directCalls(base)) - before).toBe(0)
      yield* expectFailure(
        owner.api.events.authorizeEvent({ payload: eventBody(owner, AGENT, reply(padded)) }),
        413,
        "content_too_large"
      )

      // A string in params counts as well, named by its path.
      const params = JSON.stringify(
        eventBody(owner, AGENT, {
          operation: "send_email",
          params: { to: "a@example.com", body: ["ok", "é".repeat(CAP / 2 + 1)] }
        })
      )
      const lane = yield* post(base, "/v1/events", params, { token, chunked: false })
      expect(lane.status).toBe(413)
      expect(lane.body).toMatchObject({
        error: { code: "content_too_large", details: [{ path: "action.params.body.1" }] }
      })

      // At the cap exactly, the event is decided (multi-byte characters are counted in UTF-8 bytes).
      const atCap = yield* post(
        base,
        "/v1/events",
        JSON.stringify(eventBody(owner, AGENT, reply(`top secret ${"x".repeat(CAP - 11)}`))),
        { token, chunked: false }
      )
      expect(atCap.status).toBe(200)
      expect(atCap.body["effect"]).toBe("deny")
    })
  )
})
