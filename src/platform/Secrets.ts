/**
 * Secrets the service needs even when unconfigured: a configured value wins;
 * otherwise one is generated once and persisted under DATA_DIR/secrets with
 * owner-only permissions, so restarts keep issued tokens valid.
 */
import { Effect, Option, Redacted } from "effect"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { AppConfig } from "./Config.js"
import { randomToken } from "./Ids.js"

const persisted = (dataDir: string, name: string) =>
  Effect.sync(() => {
    const directory = resolve(dataDir, "secrets")
    const file = join(directory, name)
    if (existsSync(file)) return readFileSync(file, "utf8").trim()
    mkdirSync(directory, { recursive: true, mode: 0o700 })
    const secret = randomToken(48)
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: "wx" })
    chmodSync(file, 0o600)
    return secret
  })

export class Secrets extends Effect.Service<Secrets>()("platform/Secrets", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const jwtSecret = Option.isSome(config.jwtSecret)
      ? config.jwtSecret.value
      : Redacted.make(yield* persisted(config.dataDir, "jwt-secret"))
    return { jwtSecret }
  }),
  dependencies: [AppConfig.Default]
}) {}
