/**
 * Start-up failures a person can fix (the port is taken, PostgreSQL or
 * Kafka cannot be reached) are told as one plain sentence on stderr saying
 * what to do, not as a logged, escaped stack. Any other failure is logged
 * as before. Every service's `main.ts` runs through `runService`.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Predicate } from "effect"

/** An error and the errors beneath it (`cause` chains), outermost first. */
const chainOf = (error: unknown): ReadonlyArray<unknown> => {
  const chain: Array<unknown> = []
  let current: unknown = error
  while (current !== undefined && current !== null && !chain.includes(current) && chain.length < 10) {
    chain.push(current)
    current = Predicate.hasProperty(current, "cause") ? current.cause : undefined
  }
  return chain
}

const textOf = (error: unknown, key: string): string | undefined =>
  Predicate.hasProperty(error, key) && (typeof error[key] === "string" || typeof error[key] === "number")
    ? String(error[key])
    : undefined

/** The innermost message of the chain: what actually went wrong (e.g. `connect ECONNREFUSED 127.0.0.1:5432`). */
const rootMessage = (chain: ReadonlyArray<unknown>) =>
  chain
    .map((error) => textOf(error, "message"))
    .filter((message) => message !== undefined && message !== "")
    .at(-1) ?? "no detail"

/** The sentence for a failure a person can fix; undefined for any other. */
export const startupSentence = (error: unknown): string | undefined => {
  const chain = chainOf(error)
  const inUse = chain.find((link) => textOf(link, "code") === "EADDRINUSE")
  if (inUse !== undefined) {
    const port = textOf(inUse, "port") ?? "the configured port"
    const address = textOf(inUse, "address")
    return `Port ${port}${address === undefined ? "" : ` on ${address}`} is already in use: stop the process that holds it, or start with PORT set to a free port.`
  }
  if (chain.some((link) => textOf(link, "name")?.startsWith("KafkaJS") === true)) {
    return `Kafka cannot be reached at KAFKA_BROKERS (${rootMessage(chain)}): start the broker (npm run kafka starts a local one) or fix KAFKA_BROKERS; leave it unset to use the database-backed event log.`
  }
  if (Predicate.isTagged(error, "SqlError")) {
    return `PostgreSQL cannot be reached at DATABASE_URL (${rootMessage(chain)}): start PostgreSQL or fix DATABASE_URL; leave it unset to use the embedded database.`
  }
  return undefined
}

/** Runs a service's program as `NodeRuntime.runMain` does, telling fixable start-up failures in one sentence. */
export const runService = <E>(program: Effect.Effect<never, E>) =>
  program.pipe(
    Effect.tapErrorCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.void
      const sentence = [...Cause.failures(cause), ...Cause.defects(cause)]
        .map(startupSentence)
        .find((found) => found !== undefined)
      return sentence === undefined ? Effect.logError(cause) : Effect.sync(() => process.stderr.write(`${sentence}\n`))
    }),
    NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
  )
