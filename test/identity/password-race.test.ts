/**
 * Concurrent password changes by one user: each request presents the current
 * password, but only one may replace it. Before, every one of them succeeded
 * and the last write won, so the password in force was not the one whose
 * change the user saw answered last.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, expectError } from "../support/Raw.js"
import { sha256Hex, signUp } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const CHANGES = 8

layer(testServer("database", { LOGIN_FAILURE_LIMIT: "1000" }), SERVER_OPTIONS)("password changes at once", (it) => {
  it.effect("of concurrent changes with the same current password, exactly one wins; the others are refused", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const user = yield* signUp(base)
      const candidates = Array.from({ length: CHANGES }, (_, index) => sha256Hex(`${user.username} new ${index}`))
      const answers = yield* Effect.forEach(
        candidates,
        (new_password) =>
          call(base, "POST", "/v1/auth/password", {
            body: { username: user.username, current_password: user.password, new_password }
          }),
        { concurrency: "unbounded" }
      )
      const winners = answers.flatMap((answer, index) => (answer.status === 200 ? [candidates[index]!] : []))
      expect(winners, answers.map((answer) => `${answer.status} ${answer.text}`).join("\n")).toHaveLength(1)
      // A loser either checked the old password after the winner replaced it (401) or lost the write (409).
      for (const answer of answers.filter((each) => each.status !== 200)) {
        if (answer.status === 409) expectError(answer, 409, "password_changed")
        else expectError(answer, 401)
      }
      const login = (password: string) =>
        call(base, "POST", "/v1/auth/login", { body: { username: user.username, password } })
      expect((yield* login(winners[0]!)).status).toBe(200)
      for (const loser of candidates.filter((candidate) => candidate !== winners[0])) {
        expect((yield* login(loser)).status).toBe(401)
      }
    })
  )
})
