/**
 * Kafka TLS and SASL settings as every kafkajs client of the service receives
 * them (event log, consumer-lag gauge, `npm run tail`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AppConfig } from "../../src/platform/Config.js"
import { kafkaConnectionOf } from "../../src/platform/KafkaConnection.js"
import { configLayer } from "../support/TestPlatform.js"

const connectionWith = (settings: Record<string, string>) =>
  Effect.map(AppConfig, kafkaConnectionOf).pipe(
    Effect.provide(AppConfig.Default),
    Effect.provide(configLayer({ KAFKA_BROKERS: "127.0.0.1:9092,127.0.0.1:9093", ...settings }))
  )

describe("Kafka connection settings", () => {
  it.effect("by default: the brokers over plaintext, no SASL", () =>
    Effect.gen(function* () {
      expect(yield* connectionWith({})).toEqual({ brokers: ["127.0.0.1:9092", "127.0.0.1:9093"] })
    })
  )

  it.effect("KAFKA_SSL=true turns TLS on with Node's CAs; KAFKA_SSL_CA_FILE trusts that CA (and implies TLS)", () =>
    Effect.gen(function* () {
      expect((yield* connectionWith({ KAFKA_SSL: "true" })).ssl).toBe(true)
      const caFile = join(mkdtempSync(join(tmpdir(), "kafka-ca-")), "ca.pem")
      writeFileSync(caFile, "-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----\n")
      expect((yield* connectionWith({ KAFKA_SSL_CA_FILE: caFile })).ssl).toEqual({
        ca: ["-----BEGIN CERTIFICATE-----\nTEST\n-----END CERTIFICATE-----\n"]
      })
    })
  )

  it.effect("SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 with username and password", () =>
    Effect.gen(function* () {
      for (const mechanism of ["plain", "scram-sha-256", "scram-sha-512"]) {
        const connection = yield* connectionWith({
          KAFKA_SSL: "true",
          KAFKA_SASL_MECHANISM: mechanism,
          KAFKA_SASL_USERNAME: "guardrail",
          KAFKA_SASL_PASSWORD: "kafka-password-0123"
        })
        expect(connection.sasl).toEqual({ mechanism, username: "guardrail", password: "kafka-password-0123" })
        expect(connection.ssl).toBe(true)
      }
    })
  )

  it.effect("an unknown mechanism, or a mechanism without credentials, is a configuration error", () =>
    Effect.gen(function* () {
      for (const settings of [
        { KAFKA_SASL_MECHANISM: "gssapi", KAFKA_SASL_USERNAME: "u", KAFKA_SASL_PASSWORD: "p" },
        { KAFKA_SASL_MECHANISM: "plain" },
        { KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_USERNAME: "u" }
      ]) {
        const exit = yield* Effect.exit(connectionWith(settings))
        expect(Exit.isFailure(exit), JSON.stringify(settings)).toBe(true)
      }
    })
  )
})
