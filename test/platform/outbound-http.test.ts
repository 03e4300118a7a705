/**
 * Outbound calls over HTTP (docs/outbound.md): every URL the service will
 * call is refused at save time when it points inside (400 naming the field),
 * the gateway connects only to the address it checked (an injected resolver
 * rebinds a name between save and call), redirects are never followed, and
 * webhook URLs are masked below admin. Only 127.0.0.1 is allowlisted; all
 * traffic stays on loopback.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createServer, type Socket } from "node:net"
import type { AddressInfo } from "node:net"
import { createAgent, propose, reply, until } from "../authorization-http/event-helpers.js"
import { createAlert } from "../billing/billing-helpers.js"
import { GATEWAY_SETTINGS, PROVIDER_KEY, setupGateway } from "../gateway/gateway-helpers.js"
import {
  call,
  createKey,
  expectError,
  expectStatus,
  expectValidation,
  INTERNAL_KEY,
  joinedAs,
  SERVER_OPTIONS,
  tenant
} from "../identity/http-helpers.js"
import { baseUrl, testServer } from "../support/TestServer.js"
import { loopbackServer, scriptedResolver } from "./outbound-helpers.js"

const { resolver } = scriptedResolver({
  // Public when the connection is saved, loopback when the gateway calls it (rebinding).
  "rebind.test": [["93.184.216.34"], ["127.0.0.1"]],
  "internal.test": [["10.0.0.5"]]
})

const server = testServer("database", {
  ...GATEWAY_SETTINGS,
  HTTP_URL_ALLOWLIST: "127.0.0.1",
  INTERNAL_API_KEY: INTERNAL_KEY,
  WEBHOOK_MAX_ATTEMPTS: "1"
}, resolver)

/** A loopback TCP listener that only counts the connections it gets. */
const connectionCounter = Effect.acquireRelease(
  Effect.async<{ readonly port: number; readonly connections: () => number; readonly close: () => void }>((resume) => {
    const sockets: Array<Socket> = []
    const listener = createServer((socket) => {
      sockets.push(socket)
      socket.destroy()
    })
    listener.listen(0, "127.0.0.1", () =>
      resume(
        Effect.succeed({
          port: (listener.address() as AddressInfo).port,
          connections: () => sockets.length,
          close: () => listener.close()
        })
      )
    )
  }),
  (counter) => Effect.sync(counter.close)
)

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
        const connection = yield* call(base, "POST", "/v1/gateway/provider-connections", {
          token: owner.jwt,
          body: { display_name: "x", kind: "chat_compatible", provider_api_key: PROVIDER_KEY, base_url: url }
        })
        expect(expectValidation(connection, "base_url").message, url).toContain("HTTP_URL_ALLOWLIST")
        expectValidation(
          yield* call(base, "POST", "/v1/financial/budget-alerts", {
            token: owner.jwt,
            body: { name: "a", threshold_type: "absolute", threshold_value: 1, window: "day", webhook_url: url }
          }),
          "webhook_url"
        )
        expectValidation(
          yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, body: { escalation_webhook_url: url } }),
          "escalation_webhook_url"
        )
        expectValidation(
          yield* call(base, "POST", "/v1/knowledge-sources", {
            token: owner.jwt,
            body: { kind: "url", title: "Docs", location: url }
          }),
          "location"
        )
      }
    })
  )

  it.effect("a url knowledge source needs only kind and title: a draft without a location", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = yield* tenant(base)
      const draft = expectStatus(
        yield* call(base, "POST", "/v1/knowledge-sources", { token: owner.jwt, body: { kind: "url", title: "Docs" } }),
        201
      )
      expect(draft).toMatchObject({ kind: "url", title: "Docs", status: "draft", location: null })
      expectValidation(
        yield* call(base, "POST", "/v1/knowledge-sources", {
          token: owner.jwt,
          body: { kind: "url", title: "Docs", location: "not a url" }
        }),
        "location"
      )
      const located = yield* call(base, "POST", "/v1/knowledge-sources", {
        token: owner.jwt,
        body: { kind: "url", title: "Docs", location: "https://docs.example.com/guide" }
      })
      expect(expectStatus(located, 201)).toMatchObject({ status: "draft", location: "https://docs.example.com/guide" })
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
        const key = yield* createKey(base, owner)
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
      const key = yield* createKey(base, owner)
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
      expectStatus(
        yield* call(base, "PATCH", "/v1/settings", {
          token: owner.jwt,
          body: { escalation_webhook_url: `http://127.0.0.1:${redirector.port}/escalations` }
        }),
        200
      )
      const alert = yield* createAlert(base, owner.jwt, {
        name: "first action",
        meter: "actions",
        threshold_type: "absolute",
        threshold_value: 1,
        window: "day",
        webhook_url: `http://127.0.0.1:${redirector.port}/budget`
      })
      expect((yield* propose(base, owner, "support-bot", reply("I will ask our lawyer."))).status).toBe("escalated")
      // The delivery's one attempt is recorded after its POST ended: a followed redirect would have reached the sink.
      const attempts = yield* until(
        Effect.map(
          call(base, "GET", `/v1/financial/budget-alerts/${alert.id}/deliveries`, { token: owner.jwt }),
          (response) => {
            const { deliveries } = expectStatus(response, 200) as {
              deliveries: Array<{
                status: string
                attempts: Array<{ response_status: number | null; error: string | null }>
              }>
            }
            expect(deliveries[0]?.status).toBe("failed")
            return deliveries[0]!.attempts
          }
        ),
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
      expectStatus(
        yield* call(base, "PATCH", "/v1/settings", { token: owner.jwt, body: { escalation_webhook_url: hook } }),
        200
      )
      yield* createAlert(base, owner.jwt, {
        name: "n",
        threshold_type: "absolute",
        threshold_value: 1,
        window: "day",
        webhook_url: hook
      })
      const admin = yield* joinedAs(base, owner, "admin")
      const member = yield* joinedAs(base, owner, "member")
      const key = yield* createKey(base, owner)
      const seenBy = (token: string, workspace?: string) =>
        Effect.gen(function* () {
          const alerts = expectStatus(
            yield* call(base, "GET", "/v1/financial/budget-alerts", { token, workspace }),
            200
          ) as { configs: Array<{ webhook_url: string | null }> }
          return alerts.configs[0]!.webhook_url
        })
      const settingsSeenBy = (token: string, workspace?: string) =>
        Effect.map(
          call(base, "GET", "/v1/settings", { token, workspace }),
          (response) =>
            (expectStatus(response, 200) as { escalation_webhook_url: string | null }).escalation_webhook_url
        )
      expect(yield* seenBy(owner.jwt)).toBe(hook)
      expect(yield* settingsSeenBy(owner.jwt)).toBe(hook)
      expect(yield* seenBy(admin.jwt, owner.workspaceId)).toBe(hook)
      expect(yield* settingsSeenBy(admin.jwt, owner.workspaceId)).toBe(hook)
      expect(yield* seenBy(member.jwt, owner.workspaceId)).toBe("https://hooks.example.com/***")
      expect(yield* settingsSeenBy(member.jwt, owner.workspaceId)).toBe("https://hooks.example.com/***")
      expect(yield* seenBy(key.plaintext_key)).toBe("https://hooks.example.com/***")
    })
  )
})
