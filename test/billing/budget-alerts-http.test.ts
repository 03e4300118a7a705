/**
 * Budget alert configs over HTTP: create (secret shown once), list, patch
 * (principal_id and webhook_url cannot be cleared), delete, webhook URL
 * rules, validation, workspace isolation and who may call what.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  call,
  createKey,
  expectError,
  expectStatus,
  expectValidation,
  SERVER_OPTIONS,
  TIMESTAMP,
  tenant
} from "../identity/http-helpers.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import { type AlertBody, createAlert } from "./billing-helpers.js"

const ALERTS = "/v1/financial/budget-alerts"

layer(testServer("kafka", { HTTP_URL_ALLOWLIST: "127.0.0.1" }), SERVER_OPTIONS)("budget alert configs", (it) => {
  it.effect("create, list, patch and delete; the secret is shown once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const created = yield* createAlert(base, owner.jwt, {
        name: "daily spend",
        threshold_type: "percent",
        threshold_value: 80,
        window: "day"
      })
      expect(created).toMatchObject({
        name: "daily spend",
        meter: "llm_spend",
        threshold_type: "percent",
        threshold_value: 80,
        window: "day",
        enabled: true,
        principal_id: null,
        webhook_url: null,
        workspace_id: owner.workspaceId
      })
      expect(created.created_at).toMatch(TIMESTAMP)
      expect(created.webhook_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)

      const second = yield* createAlert(base, owner.jwt, {
        name: "agent actions",
        meter: "actions",
        threshold_type: "absolute",
        threshold_value: 1000,
        window: "month",
        enabled: false,
        principal_id: "support-bot",
        webhook_url: "https://hooks.example.com/budget"
      })
      expect(second.webhook_secret).not.toBe(created.webhook_secret)

      const listed = expectStatus(yield* call(base, "GET", ALERTS, { token: owner.jwt }), 200) as {
        configs: Array<AlertBody>
      }
      expect(listed.configs.map((config) => config.id)).toEqual([second.id, created.id])
      expect(JSON.stringify(listed)).not.toContain("whsec_")
      const { webhook_secret: _, ...secondWithoutSecret } = second
      expect(listed.configs[0]).toEqual(secondWithoutSecret)

      // PATCH: absent fields unchanged; narrowing fields may be set.
      const patched = expectStatus(
        yield* call(base, "PATCH", `${ALERTS}/${created.id}`, {
          token: owner.jwt,
          body: {
            name: "daily spend (90%)",
            threshold_value: 90,
            principal_id: "key_1",
            webhook_url: "http://127.0.0.1:9/x"
          }
        }),
        200
      ) as AlertBody
      expect(patched).toMatchObject({
        id: created.id,
        name: "daily spend (90%)",
        threshold_value: 90,
        threshold_type: "percent",
        window: "day",
        principal_id: "key_1",
        webhook_url: "http://127.0.0.1:9/x"
      })
      expect(patched).not.toHaveProperty("webhook_secret")
      expect(
        expectStatus(yield* call(base, "PATCH", `${ALERTS}/${created.id}`, { token: owner.jwt, body: {} }), 200)
      ).toEqual(patched)

      // Clearing principal_id or webhook_url is refused with a message that says to recreate.
      for (const field of ["principal_id", "webhook_url"]) {
        const error = expectValidation(
          yield* call(base, "PATCH", `${ALERTS}/${created.id}`, { token: owner.jwt, body: { [field]: null } }),
          field
        )
        expect(error.message).toMatch(/cannot be cleared/)
        expect(error.message).toMatch(/create a new one/)
      }
      const unchanged = expectStatus(yield* call(base, "GET", ALERTS, { token: owner.jwt }), 200) as {
        configs: Array<AlertBody>
      }
      expect(unchanged.configs.find((config) => config.id === created.id)).toEqual(patched)

      // Delete: 204, then 404 everywhere.
      const deleted = yield* call(base, "DELETE", `${ALERTS}/${created.id}`, { token: owner.jwt })
      expect(deleted.status).toBe(204)
      expect(deleted.text).toBe("")
      expectError(
        yield* call(base, "DELETE", `${ALERTS}/${created.id}`, { token: owner.jwt }),
        404,
        "budget_alert_not_found"
      )
      expectError(
        yield* call(base, "PATCH", `${ALERTS}/${created.id}`, { token: owner.jwt, body: { name: "x" } }),
        404,
        "budget_alert_not_found"
      )
      expectError(yield* call(base, "GET", `${ALERTS}/${created.id}/firings`, { token: owner.jwt }), 404)
      expectError(yield* call(base, "GET", `${ALERTS}/${created.id}/deliveries`, { token: owner.jwt }), 404)
      expect(
        (
          expectStatus(yield* call(base, "GET", ALERTS, { token: owner.jwt }), 200) as { configs: Array<AlertBody> }
        ).configs.map((config) => config.id)
      ).toEqual([second.id])
      expect(
        expectStatus(yield* call(base, "GET", `${ALERTS}/${second.id}/firings`, { token: owner.jwt }), 200)
      ).toEqual({
        firings: []
      })
      expect(
        expectStatus(yield* call(base, "GET", `${ALERTS}/${second.id}/deliveries`, { token: owner.jwt }), 200)
      ).toEqual({ deliveries: [] })
    })
  )

  it.effect("validation: required fields, enums, positive thresholds and outbound URL rules", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const valid = { name: "n", threshold_type: "absolute", threshold_value: 5, window: "day" }
      const bad: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
        [{ ...valid, name: undefined }, "name"],
        [{ ...valid, name: "" }, "name"],
        [{ ...valid, threshold_type: "ratio" }, "threshold_type"],
        [{ ...valid, threshold_value: 0 }, "threshold_value"],
        [{ ...valid, threshold_value: 2.5 }, "threshold_value"],
        [{ ...valid, window: "week" }, "window"],
        [{ ...valid, meter: "tokens" }, "meter"],
        [{ ...valid, webhook_url: "http://hooks.example.com/x" }, "webhook_url"],
        [{ ...valid, webhook_url: "ftp://127.0.0.1/x" }, "webhook_url"],
        [{ ...valid, webhook_url: "not a url" }, "webhook_url"],
        [{ ...valid, webhook_url: "https://user:pw@hooks.example.com/x" }, "webhook_url"],
        [{ ...valid, principal_id: "  " }, "principal_id"]
      ]
      for (const [body, path] of bad) {
        expectValidation(yield* call(base, "POST", ALERTS, { token: owner.jwt, body }), path)
      }
      const alert = yield* createAlert(base, owner.jwt, { ...valid, webhook_url: "http://127.0.0.1:8/ok" })
      expectValidation(
        yield* call(base, "PATCH", `${ALERTS}/${alert.id}`, {
          token: owner.jwt,
          body: { webhook_url: "http://10.0.0.1/internal" }
        }),
        "webhook_url"
      )
      expectValidation(
        yield* call(base, "PATCH", `${ALERTS}/${alert.id}`, { token: owner.jwt, body: { threshold_value: -1 } }),
        "threshold_value"
      )
      expectError(yield* call(base, "POST", ALERTS, { token: owner.jwt, raw: "{not json" }), 400, "malformed_json")
    })
  )

  it.effect("configs are scoped to the workspace; runtime keys and members may only read", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const stranger = yield* tenant(base)
      const alert = yield* createAlert(base, owner.jwt, {
        name: "mine",
        threshold_type: "absolute",
        threshold_value: 5,
        window: "month"
      })
      expect(
        (expectStatus(yield* call(base, "GET", ALERTS, { token: stranger.jwt }), 200) as { configs: Array<unknown> })
          .configs
      ).toEqual([])
      for (const [method, path, body] of [
        ["PATCH", `${ALERTS}/${alert.id}`, { name: "theirs" }],
        ["DELETE", `${ALERTS}/${alert.id}`, undefined],
        ["GET", `${ALERTS}/${alert.id}/firings`, undefined],
        ["GET", `${ALERTS}/${alert.id}/deliveries`, undefined]
      ] as const) {
        expectError(yield* call(base, method, path, { token: stranger.jwt, body }), 404, "budget_alert_not_found")
      }

      const key = yield* createKey(base, owner)
      expect(
        (
          expectStatus(yield* call(base, "GET", ALERTS, { token: key.plaintext_key }), 200) as {
            configs: Array<AlertBody>
          }
        ).configs.map((config) => config.id)
      ).toEqual([alert.id])
      expectStatus(yield* call(base, "GET", `${ALERTS}/${alert.id}/firings`, { token: key.plaintext_key }), 200)
      expectError(
        yield* call(base, "POST", ALERTS, {
          token: key.plaintext_key,
          body: { name: "k", threshold_type: "absolute", threshold_value: 1, window: "day" }
        }),
        403
      )
      // Delivery records are operational detail of the admin-managed webhook: admins only.
      expectError(yield* call(base, "GET", `${ALERTS}/${alert.id}/deliveries`, { token: key.plaintext_key }), 403)
      expectError(yield* call(base, "DELETE", `${ALERTS}/${alert.id}`, { token: key.plaintext_key }), 403)
      expect((yield* call(base, "GET", ALERTS)).status).toBe(401)
    })
  )
})
