/**
 * The analytics stream consumer: decisions, run events, review events and
 * LLM usage become aggregate deltas, applied with the consumer's dedupe
 * records and partition positions in one transaction per batch (Consumer.ts),
 * so each event is counted exactly once. An event whose time is older than
 * the grace period (ANALYTICS_LATE_GRACE_SECONDS) when it is aggregated is
 * still counted, in its event-time buckets, with dimension `late` = "true".
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, Layer, Option, ParseResult, Schema } from "effect"
import { DecisionMessage } from "../authorization/Domain.js"
import { LlmUsageMessage } from "../billing/Domain.js"
import { AppConfig } from "../platform/Config.js"
import { consumeStream, UndecodableEvent } from "../platform/Consumer.js"
import type { Delivery } from "../platform/EventLog.js"
import { Topics } from "../platform/Topics.js"
import { ReviewEventMessage, RunEventMessage } from "../runs/Domain.js"
import { type AggregateDelta, Aggregates, type Dimensions } from "./Aggregates.js"
import { Series } from "./Catalog.js"

export const ANALYTICS_GROUP = "analytics"
export const analyticsTopics = [Topics.decisions, Topics.runEvents, Topics.reviewEvents, Topics.llmUsage]

const decoders = {
  [Topics.decisions]: Schema.decodeUnknownOption(Schema.parseJson(DecisionMessage)),
  [Topics.runEvents]: Schema.decodeUnknownOption(Schema.parseJson(RunEventMessage)),
  [Topics.reviewEvents]: Schema.decodeUnknownOption(Schema.parseJson(ReviewEventMessage)),
  [Topics.llmUsage]: Schema.decodeUnknownOption(Schema.parseJson(LlmUsageMessage))
}

const schemas: Readonly<Record<string, Schema.Schema.AnyNoContext>> = {
  [Topics.decisions]: DecisionMessage,
  [Topics.runEvents]: RunEventMessage,
  [Topics.reviewEvents]: ReviewEventMessage,
  [Topics.llmUsage]: LlmUsageMessage
}

/** Why a delivery's value does not decode with its topic's Schema; undefined when it does. */
const undecodableReason = (delivery: Delivery): string | undefined => {
  const schema = schemas[delivery.topic]
  if (schema === undefined) return `no analytics Schema for topic ${delivery.topic}`
  return Either.match(Schema.decodeUnknownEither(Schema.parseJson(schema))(delivery.value), {
    onLeft: (error) => ParseResult.TreeFormatter.formatErrorSync(error),
    onRight: () => undefined
  })
}

const timeOf = (text: string, fallback: Date) => {
  const at = new Date(text)
  return Number.isNaN(at.getTime()) ? fallback : at
}

/** The aggregate deltas of one delivery (none for a value that does not decode). */
export const deltasOf = (delivery: Delivery, now: number, graceMs: number): ReadonlyArray<AggregateDelta> => {
  const lateness = (at: Date) => (now - at.getTime() > graceMs ? "true" : "false")
  const deltas = (
    workspaceId: string,
    at: Date,
    dims: Dimensions,
    entries: ReadonlyArray<readonly [AggregateDelta["series"], number, Dimensions?]>,
    latencyMs?: number
  ) =>
    entries.map(([series, value, extra]) => ({
      workspaceId,
      at,
      series,
      dims: { ...dims, ...extra, late: lateness(at) },
      value,
      ...(latencyMs === undefined || series !== Series.decisions ? {} : { latencyMs })
    }))
  switch (delivery.topic) {
    case Topics.decisions:
      return Option.match(decoders[Topics.decisions](delivery.value), {
        onNone: () => [],
        onSome: (message) =>
          deltas(
            message.workspace_id,
            timeOf(message.decided_at, delivery.timestamp),
            {
              agent_id: message.agent_id,
              environment_id: message.environment_id,
              effect: message.effect,
              policy_id: message.policy_ids[0],
              domain: message.domain,
              principal_id: message.principal_id,
              workflow_step: message.workflow_step
            },
            [[Series.decisions, 1], ...(message.status === "escalated" ? [[Series.escalations, 1] as const] : [])],
            message.latency_ms
          )
      })
    case Topics.runEvents:
      return Option.match(decoders[Topics.runEvents](delivery.value), {
        onNone: () => [],
        onSome: (message) =>
          deltas(
            message.workspace_id,
            timeOf(message.occurred_at, delivery.timestamp),
            { agent_id: message.agent_id, environment_id: message.environment_id, run_kind: message.run_kind },
            [
              [Series.runEvents, 1, { event_kind: message.kind }],
              ...(message.sequence === 1 ? [[Series.runs, 1] as const] : [])
            ]
          )
      })
    case Topics.reviewEvents:
      return Option.match(decoders[Topics.reviewEvents](delivery.value), {
        onNone: () => [],
        onSome: (message) =>
          deltas(
            message.workspace_id,
            timeOf(message.reviewed_at, delivery.timestamp),
            {
              agent_id: message.agent_id,
              environment_id: message.environment_id,
              run_kind: message.run_kind,
              policy_id: message.policy_ids?.[0],
              workflow_step: message.workflow_step,
              outcome: message.outcome,
              principal_id: message.reviewer_id
            },
            [
              [Series.reviews, 1],
              ...[...new Set(message.reason_codes)].map(
                (reason) => [Series.reviewReasons, 1, { reason_code: reason }] as const
              )
            ]
          )
      })
    case Topics.llmUsage:
      return Option.match(decoders[Topics.llmUsage](delivery.value), {
        onNone: () => [],
        onSome: (message) =>
          deltas(
            message.workspace_id,
            timeOf(message.effective_at, delivery.timestamp),
            {
              model: message.model,
              principal_id: message.principal_id,
              agent_id: message.agent_id,
              usage_kind: message.kind,
              currency: message.currency
            },
            [
              [Series.llmCostMinor, message.cost_minor],
              [Series.llmPromptTokens, message.prompt_tokens],
              [Series.llmCompletionTokens, message.completion_tokens]
            ]
          )
      })
    default:
      return []
  }
}

/** The consumer, forked for the life of the layer. */
export const AnalyticsConsumerLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const aggregates = yield* Aggregates
    const config = yield* AppConfig
    const graceMs = config.analyticsLateGraceSeconds * 1000
    yield* consumeStream({
      group: ANALYTICS_GROUP,
      topics: analyticsTopics,
      apply: (batch) =>
        Effect.suspend((): Effect.Effect<void, SqlError | UndecodableEvent> => {
          const now = Date.now()
          const deltas: Array<AggregateDelta> = []
          for (const delivery of batch) {
            const own = deltasOf(delivery, now, graceMs)
            // An event that counts for nothing because it does not decode is dead-lettered with the reason.
            const reason = own.length === 0 ? undecodableReason(delivery) : undefined
            if (reason !== undefined) return Effect.fail(new UndecodableEvent({ eventId: delivery.eventId, reason }))
            deltas.push(...own)
          }
          return aggregates.addMany(deltas)
        })
    }).pipe(Effect.forkScoped)
  })
).pipe(Layer.provide(Aggregates.Default))
