/**
 * The event-log topics. Names here are logical; the Kafka implementation
 * prefixes them with KAFKA_TOPIC_PREFIX. Keys and value schemas of each topic
 * are documented in docs/topics.md.
 */
export const Topics = {
  decisions: "decisions",
  runEvents: "run-events",
  reviewEvents: "review-events",
  llmUsage: "llm-usage",
  budgetFirings: "budget-firings",
  configChanges: "config-changes",
  audit: "audit"
} as const

export type TopicName = (typeof Topics)[keyof typeof Topics]

export const allTopics: ReadonlyArray<string> = Object.values(Topics)
