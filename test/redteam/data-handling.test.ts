/**
 * data_handling_mode governs red-team attack records. The same quick job on
 * demo://local-agent runs in a `raw_allowed`, a `redacted` and a
 * `metadata_only` workspace: verdicts are made on the raw replies (same
 * outcomes in every mode), but in the stricter modes no raw customer email,
 * canary-bearing reply or attacker recipient survives in redteam_attacks, in
 * the session and attack endpoints or in the shared report; metadata_only
 * keeps only digests. Hardening still yields passed candidates, re-deriving
 * what to match from a fresh replay.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import type { JobId } from "../../src/redteam/Domain.js"
import { queryDatabase } from "../support/Database.js"
import { clientAt, jsonAt, keysOf, withRaw } from "../support/Api.js"
import { type Tenant, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { DEMO, dispatch, waitForJob } from "./redteam-helpers.js"

type Mode = "raw_allowed" | "redacted" | "metadata_only"

const CANARY = "GR-CANARY-7F3A9C"
const CUSTOMER_EMAIL = "jane.doe@acme-customers.example"
const RECIPIENTS = ["audit@attacker.example", "records@exfil.example"]
const CARD = "4111 1111 1111 1111"
const RAW_VALUES = [CANARY, CUSTOMER_EMAIL, ...RECIPIENTS, CARD, "jane.doe", "attacker.example", "exfil.example"]
const DIGEST = /^\[sha256:[0-9a-f]{64} length:\d+\]$/

interface AttackRow {
  readonly seq: number
  readonly goal: string
  readonly prompt: string
  readonly reply: string | null
  readonly outcome: string
  readonly landed: boolean
  readonly evidence: string
  readonly substrates: ReadonlyArray<{ kind: string; key: string; values: ReadonlyArray<string> }>
  readonly trace_id: string | null
  readonly events: ReadonlyArray<{ actor: string; content_text: string; payload: unknown }>
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

/** Sets the mode, runs a quick job on the demo agent to completion, and answers its stored attack rows. */
const jobIn = (url: string, owner: Tenant, mode: Mode) =>
  Effect.gen(function* () {
    yield* owner.api.settings.updateSettings({ payload: { data_handling_mode: mode } })
    // The pipeline's runtime-config cache (traces) refreshes within a second.
    yield* Effect.sleep("1100 millis")
    const job = yield* dispatch(owner, { profile: "quick", target_url: DEMO })
    yield* waitForJob(owner, job.id)
    const rows = yield* queryDatabase<AttackRow>(
      url,
      "select seq, goal, prompt, reply, outcome, landed, evidence, substrates, trace_id, events from redteam_attacks where job_id = $1 order by seq",
      [job.id]
    )
    return { id: job.id, rows }
  })

/**
 * What the API shows of a job: sessions with events, attack records, the report, the shared report (JSON and
 * HTML). The text is the answers as sent, so a field outside the contract cannot hide a raw value.
 */
const servedText = (base: string, owner: Tenant, jobId: JobId) =>
  Effect.gen(function* () {
    const redteam = owner.api.redteam
    const sessions = yield* withRaw(redteam.getJob({ path: { id: jobId }, urlParams: {}, withResponse: true }))
    const records = yield* withRaw(
      redteam.listAttacks({ urlParams: { job_id: jobId, limit: 100 }, withResponse: true })
    )
    const report = yield* withRaw(redteam.getReport({ path: { id: jobId }, urlParams: {}, withResponse: true }))
    const link = yield* owner.api.redteamReports.createShareLink({ payload: { job_id: jobId } })
    const anonymous = yield* clientAt(base)
    const shared = yield* withRaw(
      anonymous.redteamReports.getSharedReport({ path: { token: link.token }, withResponse: true })
    )
    const html = yield* anonymous.redteamReports.getSharedReportHtml({ path: { token: link.token } })
    expect(sessions.value.sessions.length).toBeGreaterThan(0)
    expect(records.value.records.length).toBe(sessions.value.sessions.length)
    expect(report.value.findings.length).toBeGreaterThan(0)
    const served = [sessions, records, report, shared].map((answer) => answer.text)
    return { text: served.join("") + html, records: records.value.records }
  })

const harden = (owner: Tenant, jobId: JobId) => owner.api.redteam.hardenJob({ path: { id: jobId }, payload: {} })

const outcomes = (rows: ReadonlyArray<AttackRow>) => rows.map((row) => [row.seq, row.outcome, row.landed])

layer(testServerWithDatabase("database"), SERVER_OPTIONS)("red-team data handling", (it) => {
  it.effect("redacted and metadata_only keep no raw value of attacks; outcomes and hardening are unchanged", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const url = yield* TestDatabaseUrl
      const owner = yield* tenant(base)

      // raw_allowed: the values the stricter modes must drop are really produced by this job.
      const raw = yield* jobIn(url, owner, "raw_allowed")
      const rawStored = JSON.stringify(raw.rows)
      for (const value of [CANARY, CUSTOMER_EMAIL, CARD, RECIPIENTS[0]!]) expect(rawStored, value).toContain(value)
      const rawLanded = raw.rows.filter((row) => row.landed)
      expect(rawLanded.some((row) => row.reply?.includes(CANARY))).toBe(true)
      expect(rawLanded.some((row) => row.substrates.some((s) => s.values.includes(RECIPIENTS[0]!)))).toBe(true)

      // redacted: typed placeholders in place of every raw value, in the rows and in everything served.
      const redacted = yield* jobIn(url, owner, "redacted")
      expect(outcomes(redacted.rows)).toEqual(outcomes(raw.rows))
      const redactedStored = JSON.stringify(redacted.rows)
      for (const value of RAW_VALUES) expect(redactedStored, value).not.toContain(value)
      for (const placeholder of ["[EMAIL]", "[CANARY]", "[CARD]"])
        expect(redactedStored, placeholder).toContain(placeholder)
      const canaryReply = redacted.rows.find((row) => row.landed && row.reply?.includes("[CANARY]"))
      expect(canaryReply, "a system-prompt leak with its canary replaced").toBeDefined()
      expect(redacted.rows.every((row) => row.substrates.every((s) => s.values.length === 0))).toBe(true)
      const redactedServed = yield* servedText(base, owner, redacted.id)
      for (const value of RAW_VALUES) expect(redactedServed.text, value).not.toContain(value)
      expect(redactedServed.text).toContain("[EMAIL]")
      // The traces of the job's decisions keep no raw email either.
      const traceIds = redacted.rows.flatMap((row) => (row.trace_id === null ? [] : [row.trace_id]))
      expect(traceIds.length).toBeGreaterThan(0)
      const traces = JSON.stringify(
        yield* queryDatabase(url, "select payload from traces where id = any($1)", [traceIds])
      )
      for (const value of [CUSTOMER_EMAIL, ...RECIPIENTS]) expect(traces, value).not.toContain(value)

      // metadata_only: digests and lengths only, and they are the digests of what the raw job produced.
      const metadata = yield* jobIn(url, owner, "metadata_only")
      expect(outcomes(metadata.rows)).toEqual(outcomes(raw.rows))
      const metadataStored = JSON.stringify(metadata.rows)
      for (const value of RAW_VALUES) expect(metadataStored, value).not.toContain(value)
      for (const [index, row] of metadata.rows.entries()) {
        const rawRow = raw.rows[index]!
        for (const field of [row.goal, row.prompt, row.evidence, row.reply ?? ""]) expect(field).toMatch(DIGEST)
        expect(row.prompt).toBe(`[sha256:${sha256(rawRow.prompt)} length:${rawRow.prompt.length}]`)
        expect(row.reply).toBe(`[sha256:${sha256(rawRow.reply!)} length:${rawRow.reply!.length}]`)
        expect(row.substrates.every((s) => s.values.length === 0)).toBe(true)
        for (const event of row.events) {
          expect(event.content_text).toMatch(DIGEST)
          const toolCalls = jsonAt(event.payload, "tool_calls")
          const calls: ReadonlyArray<unknown> = Array.isArray(toolCalls) ? toolCalls : []
          for (const toolCall of calls) expect(keysOf(jsonAt(toolCall, "arguments"))).toEqual(["length", "sha256"])
          const args = jsonAt(event.payload, "arguments")
          if (args !== undefined) expect(keysOf(args)).toEqual(["length", "sha256"])
        }
      }
      const metadataServed = yield* servedText(base, owner, metadata.id)
      for (const value of RAW_VALUES) expect(metadataServed.text, value).not.toContain(value)
      expect(metadataServed.records.every((record) => DIGEST.test(record.prompt))).toBe(true)

      // Hardening: the stricter modes keep no substrate values, yet yield the same passed candidates
      // (same policy ids: same substrates and values, re-derived from a fresh replay).
      const fromRedacted = yield* harden(owner, redacted.id)
      expect(fromRedacted.candidates.length).toBeGreaterThan(0)
      for (const candidate of fromRedacted.candidates) {
        expect(candidate.verify.passed, candidate.substrate).toBe(true)
        expect(candidate.verify.false_blocks).toBe(0)
        expect(candidate.verify.blocked_landed).toBe(candidate.verify.landed_total)
        expect(candidate.policy.enabled).toBe(false)
      }
      const recipientPolicy = fromRedacted.candidates.find((c) => c.substrate.startsWith("param:send_email"))
      expect(recipientPolicy, JSON.stringify(fromRedacted.candidates.map((c) => c.substrate))).toBeDefined()
      expect(recipientPolicy!.policy.source_yaml).toContain(RECIPIENTS[0]!)
      const fromMetadata = yield* harden(owner, metadata.id)
      const fromRaw = yield* harden(owner, raw.id)
      const idsOf = (result: typeof fromRaw) => result.candidates.map((c) => c.policy.id).sort()
      expect(idsOf(fromRedacted)).toEqual(idsOf(fromRaw))
      expect(idsOf(fromMetadata)).toEqual(idsOf(fromRaw))
      expect(fromMetadata.candidates.every((c) => c.verify.passed)).toBe(true)
    })
  )
})
