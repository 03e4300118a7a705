/** Handlers of the operations extensions: the metrics endpoint and the platform admin's feature flags. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { GuardrailApi } from "../Api.js"
import { CurrentCaller } from "../identity/Authentication.js"
import { WorkspaceFeatures } from "../identity/FeatureFlags.js"
import { AppConfig } from "../platform/Config.js"
import { Forbidden, NotFound, Unauthorized } from "../http/Errors.js"
import { MetricsAuthentication } from "./Api.js"
import { makeConsumerLagGauge } from "./ConsumerLag.js"
import { renderMetrics } from "./Metrics.js"

const digest = (value: string) => createHash("sha256").update(value).digest()

export const MetricsAuthenticationLive = Layer.effect(
  MetricsAuthentication,
  Effect.map(AppConfig, (config) => {
    const expected = Option.map(config.metricsToken, (token) => digest(Redacted.value(token)))
    return {
      metricsToken: (token: Redacted.Redacted<string>) => {
        if (Option.isNone(expected)) {
          return Effect.fail(
            new NotFound({ code: "metrics_disabled", message: "Metrics are off: METRICS_TOKEN is not configured." })
          )
        }
        const given = Redacted.value(token)
        return given !== "" && timingSafeEqual(digest(given), expected.value)
          ? Effect.void
          : Effect.fail(
              new Unauthorized({ code: "unauthenticated", message: "Send Authorization: Bearer <METRICS_TOKEN>." })
            )
      }
    }
  })
)

export const MetricsHttpLive = HttpApiBuilder.group(GuardrailApi, "metrics", (handlers) =>
  Effect.gen(function* () {
    const consumerLag = yield* makeConsumerLagGauge
    const context = yield* Effect.context<AppConfig | import("@effect/sql").SqlClient.SqlClient>()
    return handlers.handle("metrics", () => renderMetrics([consumerLag]).pipe(Effect.provide(context)))
  })
).pipe(Layer.provide(MetricsAuthenticationLive))

const platformAdminOnly = Effect.gen(function* () {
  const caller = yield* CurrentCaller
  const config = yield* AppConfig
  if (caller.userId === null || !config.platformAdminUserIds.includes(caller.userId)) {
    return yield* new Forbidden({
      code: "platform_admin_required",
      message: "Only a platform admin (PLATFORM_ADMIN_USER_IDS) may read or set workspace feature flags."
    })
  }
})

export const AdminHttpLive = HttpApiBuilder.group(GuardrailApi, "admin", (handlers) =>
  Effect.gen(function* () {
    const features = yield* WorkspaceFeatures
    const config = yield* AppConfig
    return handlers
      .handle("getWorkspaceFeatures", ({ path }) =>
        platformAdminOnly.pipe(Effect.zipRight(features.flagsOf(path.id)), Effect.provideService(AppConfig, config))
      )
      .handle("updateWorkspaceFeatures", ({ path, payload }) =>
        platformAdminOnly.pipe(
          Effect.zipRight(features.setFlags(path.id, payload)),
          Effect.provideService(AppConfig, config)
        )
      )
  })
)
