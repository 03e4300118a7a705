/** JSON-lines logging: one object per line with time, level, message and the log annotations flattened in. */
import { Cause, Effect, HashMap, Layer, List, Logger } from "effect"
import { AppConfig } from "./Config.js"

const render = (value: unknown): unknown => (value instanceof Error ? value.message : value)

export const jsonLinesLogger = Logger.make(({ annotations, cause, date, logLevel, message }) => {
  const messages = List.toArray(List.fromIterable(Array.isArray(message) ? message : [message]))
  const line: Record<string, unknown> = {
    time: date.toISOString(),
    level: logLevel.label.toLowerCase(),
    message: typeof messages[0] === "string" ? messages[0] : render(messages[0])
  }
  if (messages.length > 1) line["data"] = messages.slice(1).map(render)
  for (const [key, value] of HashMap.toEntries(annotations)) line[key] = value
  if (!Cause.isEmpty(cause)) line["cause"] = Cause.pretty(cause, { renderErrorCause: true })
  process.stdout.write(`${JSON.stringify(line)}\n`)
})

/** Replaces the default logger and applies LOG_LEVEL. */
export const LoggingLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Layer.merge(Logger.replace(Logger.defaultLogger, jsonLinesLogger), Logger.minimumLogLevel(config.logLevel))
  )
).pipe(Layer.provide(AppConfig.Default))
