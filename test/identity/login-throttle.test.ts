/**
 * Failed-login throttling over HTTP: per username and per client address,
 * 429 with Retry-After after the limit, the same for existing and unknown
 * users. Each test sends from its own loopback addresses (127.0.0.x) so the
 * per-address counters of one test never reach another.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientAt } from "../support/Api.js"
import { isErrorBody } from "../support/Raw.js"
import { sha256Hex, signUp } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { answerOf, postFrom, type RawResponse } from "./http-helpers.js"

// Sign-ins go out raw through `postFrom`: each from its own loopback address, which the typed client cannot
// choose, and the 429 answers are checked for their Retry-After header and whole bodies.

const retryAfterOf = (response: RawResponse) => {
  const header = response.headers["retry-after"]
  expect(typeof header, JSON.stringify(response.headers)).toBe("string")
  expect(header).toMatch(/^\d+$/)
  return Number(header)
}

const expect429 = (response: RawResponse, windowSeconds: number) => {
  expect(response.status, response.text).toBe(429)
  expect(isErrorBody(response.body), response.text).toBe(true)
  expect((response.body as { error: { code: string } }).error.code).toBe("rate_limited")
  const wait = retryAfterOf(response)
  expect(wait).toBeGreaterThanOrEqual(1)
  expect(wait).toBeLessThanOrEqual(windowSeconds)
  return wait
}

const expect401 = (response: RawResponse) => {
  expect(response.status, response.text).toBe(401)
  expect((response.body as { error: { code: string } }).error.code).toBe("invalid_credentials")
}

/** The error body with digits erased (Retry-After seconds in the message may differ by a second). */
const shapeOf = (response: RawResponse) => JSON.stringify(response.body).replace(/\d+/g, "N")

layer(testServer("database"), SERVER_OPTIONS)("login throttling (default limit: 10 per minute)", (it) => {
  describe("per username", () => {
    it.effect("10 failures from 10 addresses, then even the right password answers 429 with Retry-After", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        for (let i = 0; i < 10; i++) {
          expect401(
            yield* postFrom(base, `127.0.1.${10 + i}`, "/v1/auth/login", {
              username: user.username,
              password: sha256Hex(`wrong ${i}`)
            })
          )
        }
        // From a fresh address, with the right password: still throttled, the username is.
        const throttled = yield* postFrom(base, "127.0.1.99", "/v1/auth/login", {
          username: user.username,
          password: user.password
        })
        expect429(throttled, 60)
        // Another case of the username is the same username.
        expect429(
          yield* postFrom(base, "127.0.1.98", "/v1/auth/login", {
            username: user.username.toUpperCase(),
            password: user.password
          }),
          60
        )
        // The password change, which checks the same credentials, is throttled too.
        expect429(
          yield* postFrom(base, "127.0.1.97", "/v1/auth/password", {
            username: user.username,
            current_password: user.password,
            new_password: sha256Hex("new")
          }),
          60
        )
        // Sessions issued before are not affected; another user logs in from the same address.
        yield* user.api.settings.getSettings({})
        const other = yield* signUp(base)
        const ok = yield* postFrom(base, "127.0.1.99", "/v1/auth/login", {
          username: other.username,
          password: other.password
        })
        expect(ok.status, ok.text).toBe(200)
      })
    )

    it.effect("an unknown username is throttled the same way: no hint whether the user exists", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const ghost = uniqueName("ghost")
        const answers: Record<string, Array<RawResponse>> = { known: [], unknown: [] }
        for (let i = 0; i < 11; i++) {
          answers["known"]!.push(
            yield* postFrom(base, `127.0.2.${10 + i}`, "/v1/auth/login", {
              username: user.username,
              password: sha256Hex(`wrong ${i}`)
            })
          )
          answers["unknown"]!.push(
            yield* postFrom(base, `127.0.3.${10 + i}`, "/v1/auth/login", {
              username: ghost,
              password: sha256Hex(`wrong ${i}`)
            })
          )
        }
        for (const kind of ["known", "unknown"] as const) {
          const responses = answers[kind]!
          for (const response of responses.slice(0, 10)) expect401(response)
          expect429(responses[10]!, 60)
        }
        // Same statuses, same bodies (but for the seconds), same headers that matter.
        expect(answers["known"]!.map((r) => r.status)).toEqual(answers["unknown"]!.map((r) => r.status))
        expect(shapeOf(answers["known"]![10]!)).toBe(shapeOf(answers["unknown"]![10]!))
        expect(answers["known"]![0]!.text).toBe(answers["unknown"]![0]!.text)
      })
    )
  })

  describe("concurrent guesses", () => {
    // Each attempt is counted before its password is checked: a burst cannot
    // get more guesses checked than the limit, however fast it arrives.
    it.effect("40 concurrent wrong passwords for one user: at most 10 are checked (401), the rest answer 429", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const responses = yield* Effect.forEach(
          Array.from({ length: 40 }, (_, i) => i),
          (i) =>
            postFrom(base, `127.0.7.${10 + i}`, "/v1/auth/login", {
              username: user.username,
              password: sha256Hex(`burst ${i}`)
            }),
          { concurrency: "unbounded" }
        )
        const checked = responses.filter((response) => response.status === 401)
        const throttled = responses.filter((response) => response.status === 429)
        expect(checked.length).toBeGreaterThanOrEqual(1)
        expect(checked.length).toBeLessThanOrEqual(10)
        expect(checked.length + throttled.length, responses.map((r) => r.status).join(",")).toBe(40)
        for (const response of checked) expect401(response)
        for (const response of throttled) expect429(response, 60)
      })
    )
  })

  describe("per client address", () => {
    it.effect("10 failures from one address with 10 usernames throttle that address, not others", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const address = "127.0.4.10"
        for (let i = 0; i < 10; i++) {
          expect401(
            yield* postFrom(base, address, "/v1/auth/login", {
              username: uniqueName(`nobody${i}`),
              password: sha256Hex("wrong")
            })
          )
        }
        // A valid login from that address is refused now...
        const throttled = yield* postFrom(base, address, "/v1/auth/login", {
          username: user.username,
          password: user.password
        })
        expect429(throttled, 60)
        // ...a fresh, unknown username from there too...
        expect429(
          yield* postFrom(base, address, "/v1/auth/login", { username: uniqueName("fresh"), password: sha256Hex("x") }),
          60
        )
        // ...while the same login from another address goes through.
        const elsewhere = yield* postFrom(base, "127.0.4.11", "/v1/auth/login", {
          username: user.username,
          password: user.password
        })
        expect(elsewhere.status, elsewhere.text).toBe(200)
      })
    )

    it.effect("X-Forwarded-For does not reset or dodge the per-address counter", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        const address = "127.0.5.10"
        for (let i = 0; i < 10; i++) {
          const forwarded = yield* clientAt(base, { headers: { "x-forwarded-for": `10.0.0.${i}` } })
          const { status } = yield* answerOf(
            forwarded.auth.login({ payload: { username: uniqueName("xff"), password: sha256Hex("wrong") } }),
            200
          )
          // These come from 127.0.0.1 (fetch), whatever the header says: 401 (or 429 once 127.0.0.1 is throttled).
          expect([401, 429]).toContain(status)
        }
        for (let i = 0; i < 10; i++) {
          expect401(
            yield* postFrom(base, address, "/v1/auth/login", {
              username: uniqueName("xff"),
              password: sha256Hex("wrong")
            })
          )
        }
        const throttled = yield* postFrom(base, address, "/v1/auth/login", {
          username: user.username,
          password: user.password
        })
        expect429(throttled, 60)
      })
    )
  })
})

layer(testServer("database", { LOGIN_FAILURE_LIMIT: "3", LOGIN_FAILURE_WINDOW_SECONDS: "2" }), SERVER_OPTIONS)(
  "login throttling (LOGIN_FAILURE_LIMIT=3, LOGIN_FAILURE_WINDOW_SECONDS=2)",
  (it) => {
    it.effect("honours the configured limit, and logins work again after Retry-After", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const user = yield* signUp(base)
        for (let i = 0; i < 3; i++) {
          expect401(
            yield* postFrom(base, `127.0.6.${10 + i}`, "/v1/auth/login", {
              username: user.username,
              password: sha256Hex(`wrong ${i}`)
            })
          )
        }
        const throttled = yield* postFrom(base, "127.0.6.20", "/v1/auth/login", {
          username: user.username,
          password: user.password
        })
        const wait = expect429(throttled, 2)
        yield* Effect.sleep(`${wait * 1000 + 250} millis`)
        const again = yield* postFrom(base, "127.0.6.20", "/v1/auth/login", {
          username: user.username,
          password: user.password
        })
        expect(again.status, again.text).toBe(200)
      })
    )
  }
)
