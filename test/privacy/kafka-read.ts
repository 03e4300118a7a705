/** Reads whole Kafka topics from the beginning with a throwaway consumer group (kafkajs), as an operator would. */
import { Effect } from "effect"
import { Kafka, logLevel } from "kafkajs"
import { inject } from "vitest"
import { uniqueName } from "../support/TestPlatform.js"

export interface TopicMessage {
  readonly topic: string
  readonly key: string
  readonly value: string
}

/**
 * Consumes `topics` (full names) from the beginning until `done(messages)`
 * holds or `timeoutMs` passes; answers every message read.
 */
export const readTopics = (
  topics: ReadonlyArray<string>,
  done: (messages: ReadonlyArray<TopicMessage>) => boolean,
  timeoutMs = 20_000
) =>
  Effect.promise(async () => {
    const kafka = new Kafka({
      clientId: uniqueName("reader"),
      brokers: [inject("kafkaBrokers")],
      logLevel: logLevel.NOTHING
    })
    const consumer = kafka.consumer({ groupId: uniqueName("reader") })
    const messages: Array<TopicMessage> = []
    await consumer.connect()
    try {
      await consumer.subscribe({ topics: [...topics], fromBeginning: true })
      await consumer.run({
        eachMessage: async ({ message, topic }) => {
          messages.push({ topic, key: message.key?.toString() ?? "", value: message.value?.toString() ?? "" })
        }
      })
      const deadline = Date.now() + timeoutMs
      while (!done(messages) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
      return [...messages]
    } finally {
      await consumer.disconnect()
    }
  })
