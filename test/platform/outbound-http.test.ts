/**
 * Outbound calls over HTTP (docs/outbound.md): every URL the service will
 * call is refused at save time when it points inside (400 naming the field),
 * the gateway connects only to the address it checked (an injected resolver
 * rebinds a name between save and call), redirects are never followed, and
 * webhook URLs are masked below admin. Only 127.0.0.1 is allowlisted; all
 * traffic stays on loopback.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { createAlert, deliveriesOf } from "../billing/billing-helpers.js"
import { createAgent, proposeCall, reply } from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { GATEWAY_SETTINGS, PROVIDER_KEY, setupGateway } from "../gateway/gateway-helpers.js"
import { expectInvalid, type GuardrailClient } from "../support/Api.js"
import { call, expectError } from "../support/Raw.js"
import { createKey, INTERNAL_KEY, joinedAs, keyClient, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { connectionCounter, loopbackServer, scriptedResolver } from "./outbound-helpers.js"

const { resolver } = scriptedResolver({
  // Public when the connection is saved, loopback when the gateway calls it (rebinding).
  "rebind.test": [["93.184.216.34"], ["127.0.0.1"]],
  "internal.test": [["10.0.0.5"]]
})

const server = testServer(
  "database",
  {
    ...GATEWAY_SETTINGS,
    HTTP_URL_ALLOWLIST: "127.0.0.1",
    INTERNAL_API_KEY: INTERNAL_KEY,
    WEBHOOK_MAX_ATTEMPTS: "1"
  },
  resolver
)

/** A call through the proxy, as its users make it. */
const chatCall = (routeBase: string, key: string) =>
  call(routeBase, "POST", "/chat_style/chat/completions", {
    token: key,
    body: { model: "stub-chat", messages: [{ role: "user", content: "hi" }] }
  })

const INTERNAL_URLS = [
  "https://10.1.2.3/v1",
  "https://169.254.169.254/latest",
  "https://metadata.google.internal/computeMetadata",
  "https://[::ffff:127.0.0.1]/v1",
  "https://127.0.0.2:8443/v1",
  "https://internal.test/v1"
]

layer(server, SERVER_OPTIONS)("outbound calls", (it) => {
  it.effect("every outbound URL field refuses internal addresses with 400 naming the field", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      for (const url of INTERNAL_URLS) {
        const connection = yield* expectInvalid(
          owner.api.providerConnections.createProviderConnection({
            payload: {
              display_name: "x",
              kind: "chat_compatible",
              provider_api_key: Redacted.make(PROVIDER_KEY),
              base_url: url
            }
          }),
          "base_url"
        )
        expect(connection.message, url).toContain("HTTP_URL_ALLOWLIST")
        yield* expectInvalid(
          createAlert(owner.api, {
            name: "a",
            threshold_type: "absolute",
            threshold_value: 1,
            window: "day",
            webhook_url: url
          }),
          "webhook_url"
        )
        yield* expectInvalid(
          owner.api.settings.updateSettings({ payload: { escalation_webhook_url: url } }),
          "escalation_webhook_url"
        )
        yield* expectInvalid(
          owner.api.knowledgeSources.createKnowledgeSource({ payload: { kind: "url", title: "Docs", location: url } }),
          "location"
        )
      }
    })
  )

  it.effect("a url knowledge source needs only kind and title: a draft without a location", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const sources = owner.api.knowledgeSources
      const draft = yield* sources.createKnowledgeSource({ payload: { kind: "url", title: "Docs" } })
      expect(draft).toMatchObject({ kind: "url", title: "Docs", status: "draft", location: null })
      yield* expectInvalid(
        sources.createKnowledgeSource({ payload: { kind: "url", title: "Docs", location: "not a url" } }),
        "location"
      )
      const located = yield* sources.createKnowledgeSource({
        payload: { kind: "url", title: "Docs", location: "https://docs.example.com/guide" }
      })
      expect(located).toMatchObject({ status: "draft", location: "https://docs.example.com/guide" })
    })
  )

  it.scoped(
    "the gateway connects only to the checked address: a name rebound to loopback is refused, unconnected",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const owner = yield* tenant(base)
        const counter = yield* connectionCounter
        // Saved while rebind.test answers a public address (nothing connects to it).
        const gateway = yield* setupGateway(base, owner, `https://rebind.test:${counter.port}/v1`)
        const key = yield* createKey(owner)
        // Called when it answers loopback: refused in the socket's lookup, cold (Effect path) and warm (direct path).
        expectError(yield* chatCall(gateway.routeBase, key.plaintext_key), 502, "upstream_address_refused")
        expectError(yield* chatCall(gateway.routeBase, key.plaintext_key), 502, "upstream_address_refused")
        expect(counter.connections()).toBe(0)
      })
  )

  it.scoped("the gateway does not follow a provider's redirect (502 upstream_redirect)", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const sink = yield* loopbackServer(200)
      const redirector = yield* loopbackServer(307, `http://127.0.0.1:${sink.port}/v1/chat/completions`)
      const gateway = yield* setupGateway(base, owner, `http://127.0.0.1:${redirector.port}/v1`)
      const key = yield* createKey(owner)
      expectError(yield* chatCall(gateway.routeBase, key.plaintext_key), 502, "upstream_redirect")
      expect(redirector.seen.map((seen) => seen.path)).toEqual(["/v1/chat/completions"])
      expect(sink.seen).toEqual([])
    })
  )

  it.scoped("budget alert and escalation webhooks behind a 307 are not followed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const sink = yield* loopbackServer(200)
      const redirector = yield* loopbackServer(307, `http://127.0.0.1:${sink.port}/internal`)
      yield* createAgent(base, owner, "support-bot")
      yield* owner.api.settings.updateSettings({
        payload: { escalation_webhook_url: `http://127.0.0.1:${redirector.port}/escalations` }
      })
      const alert = yield* createAlert(owner.api, {
        name: "first action",
        meter: "actions",
        threshold_type: "absolute",
        threshold_value: 1,
        window: "day",
        webhook_url: `http://127.0.0.1:${redirector.port}/budget`
      })
      expect((yield* proposeCall(base, owner, "support-bot", reply("I will ask our lawyer."))).status).toBe("escalated")
      // The delivery's one attempt is recorded after its POST ended: a followed redirect would have reached the sink.
      const attempts = yield* until(
        Effect.map(deliveriesOf(owner.api, alert.id), (deliveries) => {
          expect(deliveries[0]?.status).toBe("failed")
          return deliveries[0]!.attempts
        }),
        "30 seconds"
      )
      expect(attempts).toHaveLength(1)
      expect(attempts[0]!.response_status).toBe(307)
      expect(attempts[0]!.error).toContain("do not follow redirects")
      yield* until(
        Effect.sync(() => expect(redirector.seen.map((seen) => seen.path).sort()).toEqual(["/budget", "/escalations"]))
      )
      expect(sink.seen).toEqual([])
    })
  )

  it.effect("webhook URLs are whole for admins and owners, masked for members and runtime keys", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const hook = "https://hooks.example.com/services/T000/B000/secret-token"
      yield* owner.api.settings.updateSettings({ payload: { escalation_webhook_url: hook } })
      yield* createAlert(owner.api, {
        name: "n",
        threshold_type: "absolute",
        threshold_value: 1,
        window: "day",
        webhook_url: hook
      })
      const admin = yield* joinedAs(base, owner, "admin")
      const member = yield* joinedAs(base, owner, "member")
      const key = yield* keyClient(base, yield* createKey(owner))
      const seenBy = (api: GuardrailClient) =>
        Effect.map(api.budgetAlerts.listBudgetAlerts({}), (alerts) => alerts.configs[0]!.webhook_url)
      const settingsSeenBy = (api: GuardrailClient) =>
        Effect.map(api.settings.getSettings({}), (settings) => settings.escalation_webhook_url)
      expect(yield* seenBy(owner.api)).toBe(hook)
      expect(yield* settingsSeenBy(owner.api)).toBe(hook)
      expect(yield* seenBy(admin.api)).toBe(hook)
      expect(yield* settingsSeenBy(admin.api)).toBe(hook)
      expect(yield* seenBy(member.api)).toBe("https://hooks.example.com/***")
      expect(yield* settingsSeenBy(member.api)).toBe("https://hooks.example.com/***")
      expect(yield* seenBy(key)).toBe("https://hooks.example.com/***")
    })
  )
})
