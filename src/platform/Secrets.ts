/**
 * Secrets the service needs even when unconfigured: a configured value wins;
 * otherwise one is generated once and persisted under DATA_DIR/secrets with
 * owner-only permissions, so restarts keep issued tokens valid.
 */
import { Effect, Option, Redacted } from "effect"
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { AppConfig } from "./Config.js"
import { randomToken } from "./Ids.js"

/**
 * The content of DATA_DIR/secrets/`name` (owner-only): read when present, else `create`d and stored. Processes
 * starting together on one DATA_DIR agree: the file is linked into place whole from a draft, so exactly one
 * process's content lands and nobody reads a half-written file.
 */
export const persistedSecretFile = (dataDir: string, name: string, create: () => string): string => {
  const directory = resolve(dataDir, "secrets")
  const file = join(directory, name)
  if (existsSync(file)) return readFileSync(file, "utf8")
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  const draft = join(directory, `.${name}.${process.pid}.${randomToken(8)}`)
  writeFileSync(draft, create(), { mode: 0o600, flag: "wx" })
  try {
    linkSync(draft, file)
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error
  } finally {
    unlinkSync(draft)
  }
  return readFileSync(file, "utf8")
}

/** A random secret persisted as `name` (see `persistedSecretFile`). */
export const persistedRandomSecret = (dataDir: string, name: string) =>
  Effect.sync(() => persistedSecretFile(dataDir, name, () => `${randomToken(48)}\n`).trim())

export class Secrets extends Effect.Service<Secrets>()("platform/Secrets", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const jwtSecret = Option.isSome(config.jwtSecret)
      ? config.jwtSecret.value
      : Redacted.make(yield* persistedRandomSecret(config.dataDir, "jwt-secret"))
    return { jwtSecret }
  }),
  dependencies: [AppConfig.Default]
}) {}
