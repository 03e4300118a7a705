/**
 * The outbound guard (src/platform/OutboundGuard.ts) with an injected
 * resolver: which hosts it refuses at save time, and that a connection goes
 * only to the address checked for it (one lookup per connection: DNS
 * rebinding cannot move it). Traffic goes only to loopback stubs; every
 * other address is refused before any connection.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { sendEscalation } from "../../src/authorization/Escalations.js"
import { AppConfig } from "../../src/platform/Config.js"
import { blockedAddress } from "../../src/platform/OutboundAddresses.js"
import { type HostResolver, OutboundGuard, Resolver } from "../../src/platform/OutboundGuard.js"
import { configLayer } from "../support/TestPlatform.js"
import { bigAnswerServer, loopbackServer, scriptedResolver, tricklingServer } from "./outbound-helpers.js"

const guardWith = (resolver: HostResolver, allowlist: string) =>
  OutboundGuard.Default.pipe(
    Layer.provide(AppConfig.Default),
    Layer.provide(configLayer({ HTTP_URL_ALLOWLIST: allowlist })),
    Layer.provide(Layer.succeed(Resolver, resolver))
  )

const refusal = (raw: string) => Effect.flatMap(OutboundGuard, (guard) => Effect.flip(guard.checkUrl(raw)))

describe("address ranges", () => {
  it("refuses every internal range and accepts public addresses", () => {
    const internal = [
      "0.0.0.0",
      "0.1.2.3",
      "127.0.0.1",
      "127.255.0.9",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "100.64.0.1",
      "100.127.255.254",
      "169.254.169.254",
      "192.0.0.170",
      "198.18.0.1",
      "224.0.0.1",
      "239.255.255.250",
      "240.0.0.1",
      "255.255.255.255",
      "::",
      "::1",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
      "::ffff:8.8.8.8",
      "::127.0.0.1",
      "64:ff9b::a00:1",
      "fc00::1",
      "fd12:3456::1",
      "fe80::1",
      "fec0::1",
      "ff02::1",
      "2001:db8::1"
    ]
    for (const address of internal) expect(blockedAddress(address), address).toBeDefined()
    for (const address of ["8.8.8.8", "93.184.216.34", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111"]) {
      expect(blockedAddress(address), address).toBeUndefined()
    }
  })
})

describe("save-time check", () => {
  const { resolver } = scriptedResolver({
    "api.provider.test": [["93.184.216.34"]],
    "internal.provider.test": [["93.184.216.34", "10.0.0.5"]],
    "v6-internal.provider.test": [["fd00::5"]]
  })

  it.layer(guardWith(resolver, "127.0.0.1,stub.test"))((it) => {
    it.effect("refuses internal literals, metadata and local names, and names resolving inside", () =>
      Effect.gen(function* () {
        for (const raw of [
          "https://127.0.0.2:8443/v1",
          "https://10.1.2.3",
          "https://169.254.169.254/latest/meta-data",
          "https://metadata.google.internal/computeMetadata/v1",
          "https://[::ffff:127.0.0.1]/",
          "https://[::ffff:a01:203]/",
          "https://[::1]/",
          "https://0.0.0.0/",
          "https://167772161/",
          "https://0xa9.0xfe.0xa9.0xfe/latest",
          "https://100.64.0.1/",
          "https://[fe80::1]/",
          "https://localhost/",
          "https://metadata/",
          "https://db.cluster.local/",
          "https://internal.provider.test/v1",
          "https://v6-internal.provider.test/v1"
        ]) {
          const problem = yield* refusal(raw)
          expect(problem.kind, raw).toBe("not_allowed")
          expect(problem.message, raw).toContain("HTTP_URL_ALLOWLIST")
        }
        expect((yield* refusal("https://internal.provider.test/v1")).message).toContain("10.0.0.5")
      })
    )

    it.effect("accepts public hosts, allowlisted hosts (plain http too), and names that do not resolve yet", () =>
      Effect.gen(function* () {
        const guard = yield* OutboundGuard
        expect((yield* guard.checkUrl("https://api.provider.test/v1")).hostname).toBe("api.provider.test")
        expect((yield* guard.checkUrl("http://127.0.0.1:9/v1")).port).toBe("9")
        expect((yield* guard.checkUrl("http://stub.test:9/")).hostname).toBe("stub.test")
        expect((yield* guard.checkUrl("https://not-published.example.com/hook")).hostname).toBe(
          "not-published.example.com"
        )
        const unresolved = yield* Effect.flip(
          guard.checkUrl("https://not-published.example.com/", { unresolved: "refuse" })
        )
        expect(unresolved.message).toContain("does not resolve")
        expect((yield* refusal("http://api.provider.test/v1")).kind).toBe("invalid_url")
        expect((yield* refusal("ftp://api.provider.test/")).kind).toBe("invalid_url")
        expect((yield* refusal("https://user:pw@api.provider.test/")).kind).toBe("invalid_url")
      })
    )
  })
})

describe("connect-time check", () => {
  it.scoped("DNS rebinding: a name checked public at save time that answers a private address later is refused", () => {
    const { resolver, calls } = scriptedResolver({ "rebind.test": [["93.184.216.34"], ["10.0.0.1"]] })
    return Effect.gen(function* () {
      const guard = yield* OutboundGuard
      // Save time: the public answer passes (and nothing is connected to it).
      yield* guard.checkUrl("https://rebind.test/hook")
      // Connect time: the second answer is private, so the connection is refused before it is made.
      const failure = yield* Effect.flip(
        guard.post(new URL("https://rebind.test/hook"), {
          headers: {},
          body: "{}",
          timeoutMillis: 2_000,
          maxResponseBytes: 1024
        })
      )
      expect(failure.reason).toBe("refused")
      expect(failure.message).toContain("10.0.0.1")
      expect(calls).toEqual(["rebind.test", "rebind.test"])
    }).pipe(Effect.provide(guardWith(resolver, "")))
  })

  it.scoped("a connection goes to the address its one lookup answered (the next answer is never used)", () => {
    // An allowlisted name (its addresses are not checked) whose first answer is the stub, the next another loopback
    // address nobody listens on: a second lookup would fail the call.
    const { resolver, calls } = scriptedResolver({ "stub.test": [["127.0.0.1"], ["127.0.0.2"]] })
    return Effect.gen(function* () {
      const stub = yield* loopbackServer(200)
      const guard = yield* OutboundGuard
      const answer = yield* guard.post(new URL(`http://stub.test:${stub.port}/hook`), {
        headers: { "content-type": "application/json" },
        body: "{}",
        timeoutMillis: 5_000,
        maxResponseBytes: 1024
      })
      expect(answer.status).toBe(200)
      expect(stub.seen.map((seen) => [seen.path, seen.headers.host])).toEqual([["/hook", `stub.test:${stub.port}`]])
      expect(calls).toEqual(["stub.test"])
    }).pipe(Effect.provide(guardWith(resolver, "stub.test")))
  })

  it.scoped("refuses internal literals without connecting, and does not follow redirects", () => {
    const { resolver } = scriptedResolver({})
    return Effect.gen(function* () {
      const sink = yield* loopbackServer(200)
      const redirector = yield* loopbackServer(307, `http://127.0.0.1:${sink.port}/internal`)
      const guard = yield* OutboundGuard
      const post = (raw: string) =>
        guard.post(new URL(raw), { headers: {}, body: "{}", timeoutMillis: 5_000, maxResponseBytes: 1024 })
      for (const raw of [
        "https://10.1.2.3/",
        "https://169.254.169.254/",
        "https://[::ffff:127.0.0.1]/",
        "https://metadata.google.internal/"
      ]) {
        expect((yield* Effect.flip(post(raw))).reason, raw).toBe("refused")
      }
      const answer = yield* post(`http://127.0.0.1:${redirector.port}/hook`)
      expect(answer.status).toBe(307)
      expect(redirector.seen).toHaveLength(1)
      expect(sink.seen).toHaveLength(0)
      // The escalation webhook through the same guard: the 307 is logged as a failure, the sink never called.
      yield* sendEscalation(guard, `http://127.0.0.1:${redirector.port}/escalations`, {
        type: "decision.escalated",
        trace_id: "trc_1",
        receipt_id: "rcp_1",
        workspace_id: "ws_1",
        agent_id: "support-bot",
        environment_id: "env_1",
        reason: "test",
        findings: [],
        decided_at: new Date().toISOString()
      })
      expect(redirector.seen.map((seen) => seen.path)).toEqual(["/hook", "/escalations"])
      expect(sink.seen).toHaveLength(0)
    }).pipe(Effect.provide(guardWith(resolver, "127.0.0.1")))
  })

  it.scoped("an answer over the byte cap is aborted while streaming", () => {
    const { resolver } = scriptedResolver({})
    return Effect.gen(function* () {
      const guard = yield* OutboundGuard
      const total = 100 * 1024 * 1024
      const big = yield* bigAnswerServer(total)
      const failure = yield* Effect.flip(
        guard.post(new URL(`http://127.0.0.1:${big.port}/`), {
          headers: {},
          body: "{}",
          timeoutMillis: 5_000,
          maxResponseBytes: 64 * 1024
        })
      )
      expect(failure.reason).toBe("too_large")
      // The server saw the connection closed long before the end of its 100 MB.
      expect(yield* big.closedEarly).toBeLessThan(total / 10)
    }).pipe(Effect.provide(guardWith(resolver, "127.0.0.1")))
  })

  it.scoped("the timeout covers the whole answer: one trickled byte by byte is cut", () => {
    const { resolver } = scriptedResolver({})
    return Effect.gen(function* () {
      const guard = yield* OutboundGuard
      const trickling = yield* tricklingServer()
      const failure = yield* Effect.flip(
        guard.post(new URL(`http://127.0.0.1:${trickling.port}/`), {
          headers: {},
          body: "{}",
          timeoutMillis: 500,
          maxResponseBytes: 64 * 1024
        })
      )
      expect(failure.reason).toBe("timeout")
      // Cut after about 10 of its 100,000 bytes (a byte every 50 ms), not when they stopped coming.
      expect(yield* trickling.cutAfter).toBeLessThan(200)
    }).pipe(Effect.provide(guardWith(resolver, "127.0.0.1")))
  })
})
