/**
 * telemetry_enabled governs whether a workspace's decision details (reason
 * and findings: policy, requirement, source, severity, effect, reason) reach
 * operators: the `details` field of its `decisions` topic messages and a
 * debug-level `decision` JSON log line. Off: neither, while the decision and
 * the counts-and-ids message are unchanged.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readTopics } from "../privacy/kafka-read.js"
import { tenant } from "../support/Tenants.js"
import { startChildService } from "./child-service.js"
import { createAgent, createPolicy, propose, reply } from "../support/Events.js"

it.live(
  "details on the decisions topic and in the log only for workspaces with telemetry enabled",
  () =>
    Effect.gen(function* () {
      const service = yield* startChildService({ LOG_LEVEL: "debug" })
      const base = service.baseUrl
      const reporting = yield* tenant(base)
      const quiet = yield* tenant(base)
      for (const owner of [reporting, quiet]) {
        yield* createAgent(base, owner, "bot")
        yield* createPolicy(base, owner, "no-refunds", { value: "refund", description: "Refunds need a human" })
      }
      const settings = yield* reporting.api.settings.getSettings()
      expect(settings.telemetry_enabled).toBe(true) // the default
      yield* quiet.api.settings.updateSettings({ payload: { telemetry_enabled: false } })
      yield* Effect.sleep("1100 millis")

      const reported = yield* propose(base, reporting, "bot", reply("I promise a refund."))
      const unreported = yield* propose(base, quiet, "bot", reply("I promise a refund."))
      // The decision itself does not depend on telemetry.
      expect([reported.effect, unreported.effect]).toEqual(["deny", "deny"])
      expect(unreported.findings).toHaveLength(1)

      const messages = yield* readTopics([`${service.topicPrefix}decisions`], (read) =>
        [reported.trace_id, unreported.trace_id].every((id) => read.some((message) => message.value.includes(id)))
      )
      const valueOf = (traceId: string) =>
        JSON.parse(messages.find((message) => message.value.includes(traceId))!.value) as Record<string, unknown>
      const withDetails = valueOf(reported.trace_id)
      expect(withDetails["details"]).toEqual({
        reason: reported.reason,
        findings: [
          {
            policy_id: "no-refunds",
            requirement_id: reported.findings[0]!.requirement_id,
            source: "content",
            severity: "high",
            effect: "deny",
            reason: "Refunds need a human"
          }
        ]
      })
      const withoutDetails = valueOf(unreported.trace_id)
      expect(withoutDetails).not.toHaveProperty("details")
      expect(withoutDetails).toMatchObject({ effect: "deny", policy_ids: ["no-refunds"] })
      expect(JSON.stringify(withoutDetails)).not.toContain("Refunds need a human")

      // The debug log: one `decision` line for the reporting workspace's decision, none for the other.
      const decisionLines = service.logLines().filter((line) => line["message"] === "decision")
      const reportedLine = decisionLines.find((line) => line["trace_id"] === reported.trace_id)
      expect(reportedLine, service.output().slice(-3000)).toBeDefined()
      expect(reportedLine!["level"]).toBe("debug")
      expect(reportedLine!["decision_details"]).toEqual(withDetails["details"])
      expect(decisionLines.some((line) => line["trace_id"] === unreported.trace_id)).toBe(false)
      expect(service.output()).not.toContain(`"trace_id":"${unreported.trace_id}","decision_details"`)
    }).pipe(Effect.scoped),
  180_000
)
