/**
 * The cost side of accounts over HTTP: the scrypt cost comes from
 * PASSWORD_SCRYPT_LOG_N and old hashes are replaced at the next sign-in;
 * at most PASSWORD_HASH_CONCURRENCY hashes run at once (429 beyond); signups
 * are limited per client address.
 */
import { expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { clientAt, expectFailure } from "../support/Api.js"
import { isErrorBody } from "../support/Raw.js"
import { sha256Hex, signUp } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import {
  baseUrl,
  SERVER_OPTIONS,
  TestDatabaseUrl,
  testServer,
  testServerOver,
  testServerWithDatabase
} from "../support/TestServer.js"
import { postFrom, type RawResponse } from "./http-helpers.js"
import { queryDatabase } from "../support/Database.js"

const storedHash = (db: string, userId: string) =>
  Effect.map(
    queryDatabase<{ password_hash: string; password_version: number }>(
      db,
      "select password_hash, password_version from users where id = $1",
      [userId]
    ),
    (rows) => rows[0]!
  )

// Sign-ins and signups that must meet a limit go out raw through `postFrom`: each from a loopback address the
// typed client cannot choose, and the 429 answers are checked for their Retry-After header.
const expectRateLimited = (response: RawResponse) => {
  expect(response.status, response.text).toBe(429)
  expect(isErrorBody(response.body), response.text).toBe(true)
  expect((response.body as { error: { code: string } }).error.code).toBe("rate_limited")
  expect(response.headers["retry-after"]).toMatch(/^[1-9]\d*$/)
}

layer(testServerWithDatabase("database", { PASSWORD_SCRYPT_LOG_N: "10" }), SERVER_OPTIONS)(
  "scrypt cost from PASSWORD_SCRYPT_LOG_N",
  (it) => {
    it.effect("a hash made under a lower cost is replaced at the next sign-in; the session stays valid", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const db = yield* TestDatabaseUrl
        const user = yield* signUp(base)
        const before = yield* storedHash(db, user.user_id)
        expect(before.password_hash).toMatch(/^scrypt\$1024\$8\$1\$/)

        // A second instance over the same data, configured with a higher cost.
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          testServerOver("database", db, { PASSWORD_SCRYPT_LOG_N: "11" }),
          scope
        )
        const address = Context.get(context, HttpServer.HttpServer).address
        const second = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`

        // The old hash still verifies there, and is replaced by one of the new cost.
        const atSecond = yield* clientAt(second)
        const atFirst = yield* clientAt(base)
        const login = { payload: { username: user.username, password: user.password } }
        yield* atSecond.auth.login(login)
        const after = yield* storedHash(db, user.user_id)
        expect(after.password_hash).toMatch(/^scrypt\$2048\$8\$1\$/)
        expect(after.password_version).toBe(before.password_version)
        // The new hash verifies on both instances; sessions issued before still work.
        yield* atSecond.auth.login(login)
        yield* atFirst.auth.login(login)
        yield* user.api.settings.getSettings({})
        // A wrong password changes nothing.
        const wrong = { payload: { username: user.username, password: sha256Hex("wrong") } }
        yield* expectFailure(atSecond.auth.login(wrong), 401)
        yield* Scope.close(scope, Exit.void)
      })
    )
  }
)

// Cost 2^16 takes hundreds of milliseconds: eight sign-ins sent at once overlap, and one hashing slot cannot serve them all.
layer(
  testServer("database", { PASSWORD_SCRYPT_LOG_N: "16", PASSWORD_HASH_CONCURRENCY: "1", LOGIN_FAILURE_LIMIT: "1000" }),
  SERVER_OPTIONS
)("PASSWORD_HASH_CONCURRENCY=1", (it) => {
  it.effect("sign-ins beyond the hashing slots answer 429 with Retry-After at once; the others succeed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      // One at a time: each signup gets the slot.
      const users = yield* Effect.forEach(Array.from({ length: 8 }), () => signUp(base))
      const responses = yield* Effect.forEach(
        users,
        (user, i) =>
          postFrom(base, `127.0.9.${10 + i}`, "/v1/auth/login", { username: user.username, password: user.password }),
        { concurrency: "unbounded" }
      )
      const statuses = responses.map((response) => response.status)
      expect(
        statuses.every((status) => status === 200 || status === 429),
        statuses.join(",")
      ).toBe(true)
      expect(statuses.filter((status) => status === 200).length, statuses.join(",")).toBeGreaterThanOrEqual(1)
      expect(statuses.filter((status) => status === 429).length, statuses.join(",")).toBeGreaterThanOrEqual(1)
      for (const response of responses.filter((r) => r.status === 429)) expectRateLimited(response)
      // A refused sign-in was not a failed guess: each user signs in afterwards, one at a time.
      const anonymous = yield* clientAt(base)
      for (const user of users) {
        yield* anonymous.auth.login({ payload: { username: user.username, password: user.password } })
      }
    })
  )
})

layer(testServer("database", { SIGNUP_LIMIT: "3", SIGNUP_WINDOW_SECONDS: "3600" }), SERVER_OPTIONS)(
  "SIGNUP_LIMIT=3 per client address",
  (it) => {
    it.effect("a signup flood from one address answers 429 with Retry-After; other addresses still sign up", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const signupFrom = (address: string) =>
          postFrom(base, address, "/v1/auth/signup", { username: uniqueName("flood"), password: sha256Hex("pw") })
        for (let i = 0; i < 3; i++) expect((yield* signupFrom("127.0.10.10")).status).toBe(200)
        const refused = yield* Effect.forEach(Array.from({ length: 5 }), () => signupFrom("127.0.10.10"), {
          concurrency: "unbounded"
        })
        for (const response of refused) expectRateLimited(response)
        expect(Number(refused[0]!.headers["retry-after"])).toBeLessThanOrEqual(3600)
        expect((yield* signupFrom("127.0.10.11")).status).toBe(200)
      })
    )
  }
)
