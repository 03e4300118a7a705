/** Signing up test users over the real API. */
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { uniqueName } from "./TestPlatform.js"
import { jsonBody, request } from "./TestServer.js"

export const passwordDigest = (plaintext: string) => createHash("sha256").update(plaintext).digest("hex")

export interface TestSession {
  readonly jwt: string
  readonly user_id: string
  readonly username: string
  /** `{ authorization: "Bearer <jwt>" }` */
  readonly auth: Record<string, string>
}

/** Signs up a fresh user (with a personal workspace) and answers its session. */
export const signUp = (base: string, username = uniqueName("user")) =>
  Effect.gen(function* () {
    const response = yield* request(
      `${base}/v1/auth/signup`,
      jsonBody({ username, password: passwordDigest(`${username}-password`) })
    )
    if (response.status !== 200)
      return yield* Effect.die(new Error(`signup failed: ${response.status} ${response.text}`))
    const session = response.body as Omit<TestSession, "auth">
    return { ...session, auth: { authorization: `Bearer ${session.jwt}` } } satisfies TestSession
  })
