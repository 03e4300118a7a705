/**
 * data_handling_mode end to end, over PostgreSQL and Kafka: decisions are
 * made on the raw content, and in `redacted` and `metadata_only` modes no
 * raw PII or secret survives in traces, receipts, runs, run events, review events,
 * the answers kept for an Idempotency-Key's repeats, or any message of the
 * decisions, run-events and review-events topics.
 * `raw_allowed` keeps the content (so the checks can tell the difference).
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { queryDatabase } from "../support/Database.js"
import { createAgent, createPolicy, eventBody, proposeCall } from "../support/Events.js"
import { call } from "../support/Raw.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { readTopics } from "./kafka-read.js"

const PREFIX = `${uniqueName("priv")}.`
const EMAIL = "jane.doe@example.com"
const PHONE = "+1 415-555-0132"
const CARD = "4111 1111 1111 1111"
const IBAN = "DE89370400440532013000"
const API_KEY = "sk-proj-AbC123dEf456GhI789jKl0"
const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
const RAW_VALUES = [EMAIL, PHONE, CARD, IBAN, API_KEY, JWT, "4111111111111111", "jane.doe"]
const CONTENT = `Contact ${EMAIL} or ${PHONE}; card ${CARD}; IBAN ${IBAN}; token ${JWT}. darn`

type Mode = "raw_allowed" | "redacted" | "metadata_only"

interface Trail {
  readonly idempotencyKey: string
  readonly runId: string
  /** A run whose metadata was set by PATCH. */
  readonly patchedRunId: string
  readonly traceIds: ReadonlyArray<string>
  readonly reviewId: string
}

/** Sets the mode, waits for the runtime-config cache (1 s), and leaves a trail of every kind of record. */
const leaveTrail = (base: string, owner: Tenant, mode: Mode) =>
  Effect.gen(function* () {
    yield* owner.api.settings.updateSettings({ payload: { data_handling_mode: mode } })
    yield* Effect.sleep("1100 millis")
    const run = yield* owner.api.runs.createRun({
      payload: { agent_id: "bot", kind: "chat_session", metadata: { customer: EMAIL, card: CARD } }
    })
    const patched = yield* owner.api.runs.createRun({ payload: { agent_id: "bot", kind: "job" } })
    const patchedAnswer = yield* owner.api.runs.updateRun({
      path: { id: patched.id },
      payload: { metadata: { note: CONTENT } }
    })
    // The answers show the run as stored.
    expect(JSON.stringify([run.metadata, patchedAnswer.metadata]).includes(EMAIL)).toBe(mode === "raw_allowed")
    // POST /v1/events as the bot; decided on the raw content: the rewrite policy matches "darn", the deny policy the raw key.
    const rewritten = yield* proposeCall(
      base,
      owner,
      "bot",
      { operation: "reply", content: CONTENT, params: { to: EMAIL, card: CARD } },
      { run_id: run.id, metadata: { customer_phone: PHONE, workflow_step: "checkout" } }
    )
    expect(rewritten.effect).toBe("rewrite")
    expect(rewritten.transformed_value).toContain(EMAIL) // the caller gets its own content back
    const denied = yield* proposeCall(
      base,
      owner,
      "bot",
      { operation: "reply", content: `my key is ${API_KEY}` },
      { run_id: run.id }
    )
    expect(denied.effect).toBe("deny")
    expect(denied.findings.map((finding) => finding.policy_id)).toEqual(["no-openai-keys"])
    // With an Idempotency-Key: the caller gets its content back; what a repeat answers is stored as kept.
    const idempotencyKey = uniqueName(`trail-${mode}`)
    const keyedCall = call(base, "POST", "/v1/events", {
      token: owner.jwt,
      body: eventBody(owner, "bot", { operation: "reply", content: CONTENT }, { run_id: run.id }),
      headers: { "idempotency-key": idempotencyKey }
    })
    const keyed = yield* keyedCall
    expect(keyed.status).toBe(200)
    const keyedAnswer = keyed.body as { readonly trace_id: string; readonly transformed_value: unknown }
    expect(keyedAnswer.transformed_value).toContain(EMAIL)
    const repeated = yield* keyedCall
    expect(repeated.body).toMatchObject({ effect: "rewrite", trace_id: keyedAnswer.trace_id })
    yield* owner.api.runs.appendRunEvent({
      path: { id: run.id },
      payload: {
        kind: "user_turn",
        input_summary: CONTENT,
        output_summary: `wrote to ${EMAIL}`,
        metadata: { card: CARD }
      }
    })
    const review = yield* owner.api.reviewEvents.createReviewEvent({
      path: { trace_id: rewritten.trace_id },
      payload: { outcome: "accepted", note: `checked with ${EMAIL}`, metadata: { iban: IBAN } }
    })
    return {
      idempotencyKey,
      runId: run.id,
      patchedRunId: patched.id,
      traceIds: [rewritten.trace_id, denied.trace_id, keyedAnswer.trace_id],
      reviewId: review.id
    } satisfies Trail
  })

/** Everything stored about a trail, as one JSON text (receipt payloads decoded). */
const storedText = (url: string, trail: Trail) =>
  Effect.gen(function* () {
    const traces = yield* queryDatabase(url, "select payload from traces where id = any($1)", [trail.traceIds])
    const receipts = yield* queryDatabase<{ jws: string }>(url, "select jws from receipts where trace_id = any($1)", [
      trail.traceIds
    ])
    const events = yield* queryDatabase(
      url,
      "select label, input_summary, output_summary, metadata from run_events where run_id = $1",
      [trail.runId]
    )
    const reviews = yield* queryDatabase(url, "select note, metadata from review_events where id = $1", [
      trail.reviewId
    ])
    const repeats = yield* queryDatabase(url, "select response from idempotency_keys where idempotency_key = $1", [
      trail.idempotencyKey
    ])
    const runs = yield* queryDatabase(url, "select metadata from runs where id = any($1)", [
      [trail.runId, trail.patchedRunId]
    ])
    expect(traces).toHaveLength(3)
    expect(runs).toHaveLength(2)
    expect(receipts).toHaveLength(3)
    expect(repeats).toHaveLength(1)
    expect(events).toHaveLength(1)
    expect(reviews).toHaveLength(1)
    const receiptPayloads = receipts.map(({ jws }) => Buffer.from(jws.split(".")[1]!, "base64url").toString("utf8"))
    return JSON.stringify({ traces, receiptPayloads, events, reviews, repeats, runs })
  })

const topicText = (trail: Trail) =>
  Effect.gen(function* () {
    const topics = ["decisions", "run-events", "review-events"].map((topic) => PREFIX + topic)
    const messages = yield* readTopics(topics, (read) => {
      const text = read.map((message) => message.value).join("\n")
      return [...trail.traceIds, trail.runId, trail.reviewId].every((id) => text.includes(id))
    })
    const ours = messages.filter(
      (message) =>
        trail.traceIds.some((id) => message.value.includes(id)) ||
        message.value.includes(trail.runId) ||
        message.value.includes(trail.reviewId)
    )
    expect(new Set(ours.map((message) => message.topic.slice(PREFIX.length)))).toEqual(
      new Set(["decisions", "run-events", "review-events"])
    )
    return ours.map((message) => message.value).join("\n")
  })

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

layer(testServerWithDatabase("kafka", { KAFKA_TOPIC_PREFIX: PREFIX }), SERVER_OPTIONS)("data_handling_mode", (it) => {
  it.effect(
    "raw_allowed stores content as sent; redacted and metadata_only keep no raw value in the database or Kafka",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const url = yield* TestDatabaseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "bot")
        yield* createPolicy(base, owner, "mask-darn", { action: "rewrite", value: "darn", rewrite: "[bleep]" })
        yield* createPolicy(base, owner, "no-openai-keys", { action: "deny", value: API_KEY })

        const raw = yield* leaveTrail(base, owner, "raw_allowed")
        const rawStored = yield* storedText(url, raw)
        for (const value of [EMAIL, PHONE, CARD, IBAN, API_KEY, JWT]) expect(rawStored).toContain(value)

        const redacted = yield* leaveTrail(base, owner, "redacted")
        const redactedStored = yield* storedText(url, redacted)
        for (const value of RAW_VALUES) expect(redactedStored, value).not.toContain(value)
        for (const placeholder of ["[EMAIL]", "[PHONE]", "[CARD]", "[IBAN]", "[API_KEY]", "[JWT]"]) {
          expect(redactedStored, placeholder).toContain(placeholder)
        }
        // Structure survives: the rewritten value and the policy ids are still there, redacted.
        expect(redactedStored).toContain("[bleep]")
        expect(redactedStored).toContain("no-openai-keys")
        const redactedTopics = yield* topicText(redacted)
        for (const value of RAW_VALUES) expect(redactedTopics, value).not.toContain(value)

        const digestOnly = yield* leaveTrail(base, owner, "metadata_only")
        const digestStored = yield* storedText(url, digestOnly)
        for (const value of RAW_VALUES) expect(digestStored, value).not.toContain(value)
        expect(digestStored).not.toContain("[EMAIL]") // not even a redacted copy: only digests
        expect(digestStored).toContain(sha256(CONTENT))
        expect(digestStored).toContain(`"length":${CONTENT.length}`)
        const digestTopics = yield* topicText(digestOnly)
        for (const value of RAW_VALUES) expect(digestTopics, value).not.toContain(value)
      })
  )
})
