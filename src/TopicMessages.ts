/**
 * Every topic's key and value Schema in one registry: producers encode and
 * consumers decode with these Schemas, and operator tools (the tail script)
 * read them from here. Each value carries `schema_version`.
 */
import type { Schema } from "effect"
import { AuditEventMessage } from "./audit/Domain.js"
import { DecisionMessage } from "./authorization/Domain.js"
import { BudgetFiringMessage, LlmUsageMessage } from "./billing/Domain.js"
import { ConfigChange } from "./catalog/ConfigChanges.js"
import { type TopicName, Topics } from "./platform/Topics.js"
import { ReviewEventMessage, RunEventMessage } from "./runs/Domain.js"

export interface TopicMessage {
  /** What the message key is: it decides the partition, so order holds per key. */
  readonly key: "workspace id" | "run id"
  /** JSON value; every version carries `schema_version`. */
  readonly value: Schema.Schema.AnyNoContext
  readonly producer: string
  readonly consumers: ReadonlyArray<string>
}

export const TopicMessages: Readonly<Record<TopicName, TopicMessage>> = {
  [Topics.decisions]: {
    key: "workspace id",
    value: DecisionMessage,
    producer: "authorization (POST /v1/events)",
    consumers: ["run-counters", "analytics", "budget-actions"]
  },
  [Topics.runEvents]: {
    key: "run id",
    value: RunEventMessage,
    producer: "runs (POST /v1/runs/{id}/events)",
    consumers: ["analytics"]
  },
  [Topics.reviewEvents]: {
    key: "workspace id",
    value: ReviewEventMessage,
    producer: "runs (POST /v1/traces/{trace_id}/review-events)",
    consumers: ["analytics"]
  },
  [Topics.llmUsage]: {
    key: "workspace id",
    value: LlmUsageMessage,
    producer: "gateway (each upstream LLM call)",
    consumers: ["analytics", "llm-usage-store"]
  },
  [Topics.budgetFirings]: {
    key: "workspace id",
    value: BudgetFiringMessage,
    producer: "billing (budget alert worker)",
    consumers: ["budget-webhooks"]
  },
  [Topics.configChanges]: {
    key: "workspace id",
    value: ConfigChange,
    producer: "catalog and settings writes",
    consumers: ["every process's snapshot cache"]
  },
  [Topics.audit]: {
    key: "workspace id",
    value: AuditEventMessage,
    producer:
      "the database: audit row triggers (migration 0021), in the transaction of each configuration or access change",
    consumers: []
  }
}
