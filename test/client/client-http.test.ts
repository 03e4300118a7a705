/**
 * The published client (`src/client`, `guardrail-service/client`) against a
 * started service: every method of the Promise facade, its typed errors,
 * percent-encoded path values, and retries of 429 and 503 answers that
 * honour `Retry-After` and, with the automatic `Idempotency-Key`, write one
 * trace for a decision whose first answer was lost.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createGuardrailClient, GuardrailError, verifyReceipt } from "../../src/client/index.js"
import { queryDatabase } from "../support/Database.js"
import { createAgent, createPolicy } from "../support/Events.js"
import { createKey, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { flakyProxy } from "./flaky-proxy.js"

const AGENT = "support-bot"

/** A tenant with an agent, a policy denying "SAVE50" in replies, and a facade over a runtime key. */
const setUp = (url?: string) =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    const owner = yield* tenant(base)
    yield* createAgent(base, owner, AGENT)
    yield* createPolicy(base, owner, "no-discount-code", { value: "SAVE50" })
    const key = yield* createKey(owner)
    const client = createGuardrailClient({
      baseUrl: url ?? base,
      apiKey: key.plaintext_key,
      agentId: AGENT,
      workspaceId: owner.workspaceId,
      environmentId: owner.defaultEnvironmentId,
      retry: { baseDelayMillis: 10 }
    })
    return { base, owner, client }
  })

/** The rejection of a call that must fail. */
const rejection = (call: () => Promise<unknown>) =>
  Effect.promise(() =>
    call().then(
      (value) => expect.fail(`expected a rejection, got ${JSON.stringify(value)}`),
      (error: unknown) => error
    )
  )

const traceCount = (workspaceId: string) =>
  Effect.flatMap(TestDatabaseUrl, (db) =>
    Effect.map(
      queryDatabase<{ count: string }>(db, "select count(*)::text as count from traces where workspace_id = $1", [
        workspaceId
      ]),
      (rows) => Number(rows[0]!.count)
    )
  )

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("typed client", (it) => {
  it.effect("clients with different credentials, called at once, each act as their own caller", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owners = [yield* tenant(base), yield* tenant(base)]
      const seen = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, n) => owners[n % 2]!),
        (owner) =>
          Effect.map(owner.api.environments.listEnvironments({}), ({ environments }) => ({
            expected: owner.defaultEnvironmentId,
            listed: environments.map((environment) => environment.id)
          })),
        { concurrency: "unbounded" }
      )
      for (const { expected, listed } of seen) expect(listed).toEqual([expected])
    })
  )

  it.effect("every facade method against the service", () =>
    Effect.gen(function* () {
      const { client } = yield* setUp()
      const run = yield* Effect.promise(() => client.createRun({ agent_id: AGENT, kind: "chat_session" }))
      expect(run.status).toBe("running")

      const event = yield* Effect.promise(() =>
        client.appendRunEvent(run.id, { kind: "user_turn", input_summary: "Where is my order?" })
      )
      expect([event.run_id, event.sequence]).toEqual([run.id, 1])

      const permitted = yield* Effect.promise(() =>
        client.decide({
          kind: "output.proposed",
          action: { operation: "reply", content: "It ships today." },
          run_id: run.id
        })
      )
      expect(permitted.effect).toBe("permit")
      const denied = yield* Effect.promise(() =>
        client.decide({
          kind: "output.proposed",
          action: { operation: "reply", content: "Use SAVE50!" },
          run_id: run.id
        })
      )
      expect([denied.effect, denied.findings.map((finding) => finding.policy_id)]).toEqual([
        "deny",
        ["no-discount-code"]
      ])

      const traces = yield* Effect.promise(() => client.listRunTraces(run.id))
      expect(traces.map((trace) => trace.trace_id).sort()).toEqual([permitted.trace_id, denied.trace_id].sort())
      const detail = yield* Effect.promise(() => client.getRun(run.id))
      expect(detail.events.map((e) => e.id)).toEqual([event.id])

      const review = yield* Effect.promise(() =>
        client.review(denied.trace_id, { outcome: "accepted", note: "Right to refuse codes." })
      )
      expect([review.trace_id, review.outcome]).toEqual([denied.trace_id, "accepted"])

      const receipt = yield* Effect.promise(() => client.getReceipt(denied.receipt_id))
      expect(receipt.trace_id).toBe(denied.trace_id)
      const jwks = yield* Effect.promise(() => client.jwks())
      const claims = yield* Effect.promise(() => verifyReceipt(receipt, jwks))
      expect([claims.effect, claims.trace_id]).toEqual(["deny", denied.trace_id])
      expect((yield* Effect.promise(() => client.verifiedReceipt(permitted.receipt_id))).effect).toBe("permit")
      const forged = `${receipt.jws.slice(0, -4)}AAAA`
      const refused = yield* rejection(() => verifyReceipt(forged, jwks))
      expect((refused as Error).name).toBe("ReceiptVerificationError")

      const finished = yield* Effect.promise(() => client.updateRun(run.id, { status: "completed" }))
      expect(finished.status).toBe("completed")

      // The Effect interface shares the connection settings.
      const api = yield* Effect.promise(() => client.effect())
      const { runs } = yield* api.runs.listRuns({ urlParams: {} })
      expect(runs.map((r) => r.id)).toEqual([run.id])
    })
  )

  it.effect("failures are GuardrailErrors: the service's status and code, or an invalid request", () =>
    Effect.gen(function* () {
      const { client } = yield* setUp()
      const missing = yield* rejection(() => client.getRun("run_missing"))
      expect(missing).toBeInstanceOf(GuardrailError)
      expect([(missing as GuardrailError).kind, (missing as GuardrailError).status]).toEqual(["http", 404])
      // Path values are percent-encoded: a slash or a space stays inside the one path parameter.
      const odd = (yield* rejection(() => client.getRun("a/b c?d"))) as GuardrailError
      expect([odd.status, odd.code]).toEqual([(missing as GuardrailError).status, (missing as GuardrailError).code])
      const invalid = (yield* rejection(() =>
        client.decide({ kind: "output.proposed", action: { operation: "" } })
      )) as GuardrailError
      expect([invalid.kind, invalid.details.map((detail) => detail.path)]).toEqual([
        "invalid_request",
        ["action.operation"]
      ])
      const unauthorized = createGuardrailClient({ baseUrl: yield* baseUrl, apiKey: "gr_wrong" })
      const refused = (yield* rejection(() => unauthorized.getRun("run_x"))) as GuardrailError
      expect(refused.status).toBe(401)
      const offline = createGuardrailClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k", retry: false })
      expect(((yield* rejection(() => offline.jwks())) as GuardrailError).kind).toBe("network")
    })
  )

  it.effect(
    "path values are checked as given and sent percent-encoded; empty, . and .. are refused before sending",
    () =>
      Effect.gen(function* () {
        const { client, owner } = yield* setUp()
        const prices = owner.api.llmPricing
        const payload = { input_per_million_minor: 1, output_per_million_minor: 2 }
        // At its limit (256 characters) with slashes and non-ASCII: 1,152 once encoded, which the service's limit
        // (on the decoded value) does not count.
        const model = "é/".repeat(128)
        expect((yield* prices.putLlmPrice({ path: { model }, payload })).model).toBe(model)
        expect((yield* prices.listLlmPrices({})).prices.map((price) => price.model)).toEqual([model])
        yield* prices.deleteLlmPrice({ path: { model } })
        expect((yield* prices.listLlmPrices({})).prices).toEqual([])
        // Over the limit it is still the client's own check.
        const tooLong = yield* Effect.flip(prices.putLlmPrice({ path: { model: `${model}x` }, payload }))
        expect(tooLong._tag).toBe("ParseError")

        // A URL resolves . and .. (also as %2E), and GET /v1/runs/ is the runs list: GET /v1/runs/.. read it too.
        for (const id of ["", ".", ".."]) {
          const refused = (yield* rejection(() => client.getRun(id))) as GuardrailError
          expect([refused.kind, refused.details.map((detail) => detail.path)]).toEqual(["invalid_request", ["id"]])
        }
        const dots = yield* Effect.flip(prices.deleteLlmPrice({ path: { model: ".." } }))
        expect(dots._tag).toBe("ParseError")
      })
  )

  it.scoped("a decision whose answer was lost is retried after Retry-After with its key: one trace", () =>
    Effect.gen(function* () {
      const proxy = yield* flakyProxy(yield* baseUrl)
      const { client, owner } = yield* setUp(proxy.url)
      proxy.script([{ kind: "forward-then", status: 503, retryAfter: "1" }])
      const started = Date.now()
      const decision = yield* Effect.promise(() =>
        client.decide({ kind: "output.proposed", action: { operation: "reply", content: "Hello" } })
      )
      const attempts = proxy.seen.filter((seen) => seen.path === "/v1/events")
      expect(attempts).toHaveLength(2)
      expect(attempts[0]!.idempotencyKey).toBeDefined()
      expect(attempts[1]!.idempotencyKey).toBe(attempts[0]!.idempotencyKey)
      expect(attempts[1]!.at - started).toBeGreaterThanOrEqual(950)
      expect(decision.effect).toBe("permit")
      expect(yield* traceCount(owner.workspaceId)).toBe(1)

      // A 429 is retried too (an HTTP date in Retry-After); a run event appended once.
      const run = yield* Effect.promise(() => client.createRun({ agent_id: AGENT, kind: "workflow" }))
      proxy.script([{ kind: "refuse", status: 429, retryAfter: new Date(Date.now() + 1000).toUTCString() }])
      proxy.script([{ kind: "forward-then", status: 503 }])
      yield* Effect.promise(() => client.appendRunEvent(run.id, { kind: "agent_turn" }))
      const detail = yield* Effect.promise(() => client.getRun(run.id))
      expect(detail.events).toHaveLength(1)

      // Retries end: the last answer is the error.
      proxy.script([1, 2, 3, 4].map(() => ({ kind: "refuse", status: 503, retryAfter: "0" }) as const))
      const exhausted = (yield* rejection(() => client.jwks())) as GuardrailError
      expect([exhausted.status, exhausted.code]).toEqual([503, "unavailable"])
    })
  )
})
