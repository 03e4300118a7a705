/**
 * The connection part of every kafkajs client the service creates (event
 * log, consumer-lag gauge, `npm run tail`): brokers, TLS and SASL from
 * configuration.
 */
import type { KafkaConfig, SASLOptions } from "kafkajs"
import { Option, Redacted } from "effect"
import { readFileSync } from "node:fs"
import type { AppConfig } from "./Config.js"

export const kafkaConnectionOf = (config: AppConfig): Pick<KafkaConfig, "brokers" | "ssl" | "sasl"> => {
  const security = config.kafkaSecurity
  const ca = Option.map(security.sslCaFile, (file) => readFileSync(file, "utf8"))
  const sasl = Option.map(security.saslMechanism, (mechanism): SASLOptions => ({
    mechanism,
    username: Option.getOrElse(security.saslUsername, () => ""),
    password: Option.match(security.saslPassword, { onNone: () => "", onSome: Redacted.value })
  }))
  return {
    brokers: [...config.kafkaBrokers],
    // A CA file implies TLS: it is only useful for verifying the brokers' certificates.
    ...(security.ssl || Option.isSome(ca) ? { ssl: Option.isSome(ca) ? { ca: [ca.value] } : true } : {}),
    ...(Option.isSome(sasl) ? { sasl: sasl.value } : {})
  }
}
