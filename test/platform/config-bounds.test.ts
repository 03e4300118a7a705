/**
 * Settings with a bound beyond "at least 1": a value past it stops the start with a message naming
 * the setting, instead of a service that runs badly (MAX_REGEX_PATTERNS_PER_WORKSPACE above the
 * process's compiled-pattern cache would let one workspace recompile its patterns on every decision).
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit } from "effect"
import {
  AppConfig,
  AuditRetentionDays,
  MAX_AUDIT_RETENTION_DAYS,
  MAX_COMPILED_PATTERNS
} from "../../src/platform/Config.js"

const configWith = (settings: Record<string, string>) =>
  Effect.exit(
    Effect.withConfigProvider(AppConfig.pipe(Effect.provide(AppConfig.Default)), ConfigProvider.fromJson(settings))
  )

describe("bounded settings", () => {
  it.effect("MAX_REGEX_PATTERNS_PER_WORKSPACE fits in the compiled-pattern cache, or the start is refused", () =>
    Effect.gen(function* () {
      const fits = yield* configWith({ MAX_REGEX_PATTERNS_PER_WORKSPACE: String(MAX_COMPILED_PATTERNS) })
      expect(Exit.isSuccess(fits) && fits.value.maxRegexPatternsPerWorkspace).toBe(MAX_COMPILED_PATTERNS)
      const past = yield* configWith({ MAX_REGEX_PATTERNS_PER_WORKSPACE: String(MAX_COMPILED_PATTERNS + 1) })
      expect(Exit.isFailure(past)).toBe(true)
      expect(String(Exit.isFailure(past) ? past.cause : "")).toContain(
        `MAX_REGEX_PATTERNS_PER_WORKSPACE must be at most ${MAX_COMPILED_PATTERNS}`
      )
    })
  )

  it.effect("the retention task's batch, interval and windows are at least 1, or the start is refused", () =>
    Effect.gen(function* () {
      // A batch of 0 deleted nothing and never came back short: the sweep looped on the database forever.
      for (const name of [
        "RETENTION_BATCH_SIZE",
        "RETENTION_INTERVAL_SECONDS",
        "PROCESSED_EVENTS_RETENTION_HOURS",
        "EVENT_LOG_RETENTION_HOURS"
      ]) {
        for (const value of ["0", "-5"]) {
          const refused = yield* configWith({ [name]: value })
          expect(Exit.isFailure(refused), `${name}=${value}`).toBe(true)
          expect(String(Exit.isFailure(refused) ? refused.cause : "")).toContain(`${name} must be at least 1`)
        }
      }
      const fits = yield* configWith({ RETENTION_BATCH_SIZE: "1" })
      expect(Exit.isSuccess(fits) && fits.value.retentionBatchSize).toBe(1)
    })
  )

  it.effect("AUDIT_RETENTION_DAYS is from 0 to a hundred years, or the start is refused", () =>
    Effect.gen(function* () {
      // Far past it the cutoff was no date: every prune failed, logged, for as long as the process ran.
      const auditDays = (value: string) =>
        Effect.exit(
          Effect.withConfigProvider(AuditRetentionDays, ConfigProvider.fromJson({ AUDIT_RETENTION_DAYS: value }))
        )
      for (const value of ["-1", String(MAX_AUDIT_RETENTION_DAYS + 1), "100000000"]) {
        const refused = yield* auditDays(value)
        expect(Exit.isFailure(refused), value).toBe(true)
        expect(String(Exit.isFailure(refused) ? refused.cause : "")).toContain("AUDIT_RETENTION_DAYS must be from 0")
      }
      const fits = yield* auditDays(String(MAX_AUDIT_RETENTION_DAYS))
      expect(Exit.isSuccess(fits) && fits.value).toBe(MAX_AUDIT_RETENTION_DAYS)
    })
  )
})
