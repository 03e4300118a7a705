/**
 * Budget alert configs over HTTP: create (secret shown once), list, patch
 * (principal_id and webhook_url cannot be cleared), delete, webhook URL
 * rules, validation, workspace isolation and who may call what.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TIMESTAMP } from "../support/Formats.js"
import { expectFailure, expectInvalid, withRaw } from "../support/Api.js"
import { call, expectError, expectValidation } from "../support/Raw.js"
import { createKey, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { createAlert, type CreateAlertPayload } from "./billing-helpers.js"

const ALERTS = "/v1/financial/budget-alerts"

layer(testServer("kafka", { HTTP_URL_ALLOWLIST: "127.0.0.1" }), SERVER_OPTIONS)("budget alert configs", (it) => {
  it.effect("create, list, patch and delete; the secret is shown once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const alerts = owner.api.budgetAlerts
      const created = yield* createAlert(owner.api, {
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

      const second = yield* createAlert(owner.api, {
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

      const { text: listedText, value: listed } = yield* withRaw(alerts.listBudgetAlerts({ withResponse: true }))
      expect(listed.configs.map((config) => config.id)).toEqual([second.id, created.id])
      // What was sent, not what the client decoded (decoding would drop a secret the answer leaked).
      expect(listedText).not.toContain("whsec_")
      const { webhook_secret: _, ...secondWithoutSecret } = second
      expect(listed.configs[0]).toEqual(secondWithoutSecret)

      // PATCH: absent fields unchanged; narrowing fields may be set.
      const path = { id: created.id }
      const { body: patchedBody, value: patched } = yield* withRaw(
        alerts.updateBudgetAlert({
          path,
          payload: {
            name: "daily spend (90%)",
            threshold_value: 90,
            principal_id: "key_1",
            webhook_url: "http://127.0.0.1:9/x"
          },
          withResponse: true
        })
      )
      expect(patched).toMatchObject({
        id: created.id,
        name: "daily spend (90%)",
        threshold_value: 90,
        threshold_type: "percent",
        window: "day",
        principal_id: "key_1",
        webhook_url: "http://127.0.0.1:9/x"
      })
      expect(patchedBody).not.toHaveProperty("webhook_secret")
      expect(yield* alerts.updateBudgetAlert({ path, payload: {} })).toEqual(patched)

      // Clearing principal_id or webhook_url is refused with a message that says to recreate.
      for (const [field, payload] of [
        ["principal_id", { principal_id: null }],
        ["webhook_url", { webhook_url: null }]
      ] as const) {
        const error = yield* expectInvalid(alerts.updateBudgetAlert({ path, payload }), field)
        expect(error.message).toMatch(/cannot be cleared/)
        expect(error.message).toMatch(/create a new one/)
      }
      const unchanged = yield* alerts.listBudgetAlerts({})
      expect(unchanged.configs.find((config) => config.id === created.id)).toEqual(patched)

      // Delete: 204, then 404 everywhere.
      const deleted = yield* withRaw(alerts.deleteBudgetAlert({ path, withResponse: true }))
      expect(deleted.status).toBe(204)
      expect(deleted.text).toBe("")
      yield* expectFailure(alerts.deleteBudgetAlert({ path }), 404, "budget_alert_not_found")
      yield* expectFailure(alerts.updateBudgetAlert({ path, payload: { name: "x" } }), 404, "budget_alert_not_found")
      yield* expectFailure(alerts.listBudgetAlertFirings({ path, urlParams: {} }), 404)
      yield* expectFailure(alerts.listBudgetAlertDeliveries({ path }), 404)
      expect((yield* alerts.listBudgetAlerts({})).configs.map((config) => config.id)).toEqual([second.id])
      expect(yield* alerts.listBudgetAlertFirings({ path: { id: second.id }, urlParams: {} })).toEqual({ firings: [] })
      expect(yield* alerts.listBudgetAlertDeliveries({ path: { id: second.id } })).toEqual({ deliveries: [] })
    })
  )

  it.effect("validation: required fields, enums, positive thresholds and outbound URL rules", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const valid = { name: "n", threshold_type: "absolute", threshold_value: 5, window: "day" } as const
      // Bodies the contract's schema refuses: the typed client cannot send them.
      const malformed: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
        [{ ...valid, name: undefined }, "name"],
        [{ ...valid, name: "" }, "name"],
        [{ ...valid, threshold_type: "ratio" }, "threshold_type"],
        [{ ...valid, threshold_value: 0 }, "threshold_value"],
        [{ ...valid, threshold_value: 2.5 }, "threshold_value"],
        [{ ...valid, window: "week" }, "window"],
        [{ ...valid, meter: "tokens" }, "meter"]
      ]
      for (const [body, path] of malformed) {
        expectValidation(yield* call(base, "POST", ALERTS, { token: owner.jwt, body }), path)
      }
      // Well-formed bodies the service refuses.
      const refused: ReadonlyArray<readonly [CreateAlertPayload, string]> = [
        [{ ...valid, webhook_url: "http://hooks.example.com/x" }, "webhook_url"],
        [{ ...valid, webhook_url: "ftp://127.0.0.1/x" }, "webhook_url"],
        [{ ...valid, webhook_url: "not a url" }, "webhook_url"],
        [{ ...valid, webhook_url: "https://user:pw@hooks.example.com/x" }, "webhook_url"],
        [{ ...valid, principal_id: "  " }, "principal_id"]
      ]
      for (const [payload, path] of refused) {
        yield* expectInvalid(createAlert(owner.api, payload), path)
      }
      const alert = yield* createAlert(owner.api, { ...valid, webhook_url: "http://127.0.0.1:8/ok" })
      yield* expectInvalid(
        owner.api.budgetAlerts.updateBudgetAlert({
          path: { id: alert.id },
          payload: { webhook_url: "http://10.0.0.1/internal" }
        }),
        "webhook_url"
      )
      // A negative threshold and malformed JSON are refused by the schema and the parser: sent raw.
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
      const alert = yield* createAlert(owner.api, {
        name: "mine",
        threshold_type: "absolute",
        threshold_value: 5,
        window: "month"
      })
      const path = { id: alert.id }
      const theirs = stranger.api.budgetAlerts
      expect((yield* theirs.listBudgetAlerts({})).configs).toEqual([])
      for (const attempt of [
        theirs.updateBudgetAlert({ path, payload: { name: "theirs" } }),
        theirs.deleteBudgetAlert({ path }),
        theirs.listBudgetAlertFirings({ path, urlParams: {} }),
        theirs.listBudgetAlertDeliveries({ path })
      ]) {
        yield* expectFailure(attempt, 404, "budget_alert_not_found")
      }

      const key = yield* keyClient(base, yield* createKey(owner))
      expect((yield* key.budgetAlerts.listBudgetAlerts({})).configs.map((config) => config.id)).toEqual([alert.id])
      yield* key.budgetAlerts.listBudgetAlertFirings({ path, urlParams: {} })
      yield* expectFailure(
        key.budgetAlerts.createBudgetAlert({
          payload: { name: "k", threshold_type: "absolute", threshold_value: 1, window: "day" }
        }),
        403
      )
      // Delivery records are operational detail of the admin-managed webhook: admins only.
      yield* expectFailure(key.budgetAlerts.listBudgetAlertDeliveries({ path }), 403)
      yield* expectFailure(key.budgetAlerts.deleteBudgetAlert({ path }), 403)
      expect((yield* call(base, "GET", ALERTS)).status).toBe(401)
    })
  )
})
