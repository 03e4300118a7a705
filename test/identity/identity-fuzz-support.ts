/**
 * The property of the identity fuzz suites (identity-fuzz-auth.test.ts,
 * identity-fuzz-workspace.test.ts): send every generated request and check
 * each answer against the conventions; and the tenants a run starts from.
 * The generators are in identity-fuzz-arbitraries.ts.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { isErrorBody } from "../support/Raw.js"
import { createEnvironment, createKey, signUp, tenant } from "../support/Tenants.js"
import { uniqueName } from "../support/TestPlatform.js"
import type { Body, World } from "./identity-fuzz-arbitraries.js"

const SEED = 20_261_122
export const INVITED = ["someone@example.com", "invited1@example.com", "invited2@example.com", "invited3@example.com"]
const RUNS = 200

// ---------------------------------------------------------------- the property

export interface Sent {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string | undefined
}

interface Answer {
  readonly status: number
  readonly text: string
}

/** Raw by nature: the bodies, content types, paths and headers are random, most of them outside the contract. */
const send = async (base: string, sent: Sent): Promise<Answer> => {
  const response = await fetch(`${base}${sent.path}`, {
    method: sent.method,
    headers: sent.headers,
    ...(sent.body === undefined ? {} : { body: sent.body }),
    signal: AbortSignal.timeout(15_000)
  })
  return { status: response.status, text: await response.text() }
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

const describeSent = (sent: Sent) => {
  const nul = /\\u0000|%00/i.test(`${sent.path} ${sent.body ?? ""}`) ? " [carries a NUL character]" : ""
  return `${sent.method} ${sent.path.slice(0, 100)} ${JSON.stringify(sent.headers).slice(0, 200)} body=${String(sent.body ?? "").slice(0, 200)}${nul}`
}

/**
 * Sends every generated request and checks each answer: never 5xx, 4xx with
 * the error body, a success with a JSON body (or 204), and (when
 * `sessionMustHold`) never a 401 for the owner's valid session. Every run is
 * checked (no early stop, so one defect does not hide another); the test
 * then fails listing the offenders, one per distinct kind.
 */
export const fuzz = (
  base: string,
  requests: fc.Arbitrary<Sent>,
  options: { readonly name: string; readonly sessionMustHold: boolean; readonly runs?: number }
) =>
  Effect.gen(function* () {
    const statuses = new Map<number, number>()
    const offenders = new Map<string, string>()
    yield* Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(requests, async (sent) => {
          const answer = await send(base, sent).catch((error: unknown) => ({ status: 0, text: String(error) }))
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
          const label = `${describeSent(sent)} -> ${answer.status} ${answer.text.slice(0, 200)}`
          const kind =
            answer.status === 0
              ? "no answer"
              : answer.status >= 500
                ? `${answer.status} on ${sent.method} ${sent.path.replace(/\/v1\/environments\/[^/?]+/, "/v1/environments/{id}").split("?")[0]}`
                : answer.status >= 400 && !isErrorBody(parse(answer.text))
                  ? `${answer.status} without the error body`
                  : answer.status < 300 && answer.status !== 204 && typeof parse(answer.text) !== "object"
                    ? "success without a JSON body"
                    : options.sessionMustHold && answer.status === 401
                      ? "the valid session was refused"
                      : undefined
          if (kind !== undefined && !offenders.has(kind)) offenders.set(kind, label)
          return true
        }),
        { seed: SEED, numRuns: options.runs ?? RUNS }
      )
    )
    expect(
      [...offenders].map(([kind, example]) => `${kind}: ${example}`),
      `${options.name}: answers that break the conventions`
    ).toEqual([])
    return statuses
  })

export const withJson = (headers: Record<string, string>, body: Body) => ({
  headers: body.contentType === undefined ? headers : { ...headers, "content-type": body.contentType },
  body: body.raw
})

export const setUp = (base: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    const other = yield* tenant(base)
    const victim = yield* signUp(base, uniqueName("victim"))
    const staging = yield* createEnvironment(owner, "staging")
    const key = yield* createKey(owner)
    const otherKey = yield* createKey(other)
    // Pending invites for addresses the generators use, so my-workspaces has invites to accept.
    for (const email of INVITED) {
      yield* owner.api.team.createInvite({ payload: { email, role: "member" } })
    }
    return {
      base,
      owner,
      other,
      victim: { username: victim.username, password: victim.password },
      stagingId: staging.id,
      keyId: key.api_key.id,
      otherKeyId: otherKey.api_key.id
    } satisfies World
  })

export const count = (statuses: Map<number, number>, predicate: (status: number) => boolean) =>
  [...statuses].filter(([status]) => predicate(status)).reduce((sum, [, n]) => sum + n, 0)

export const FUZZ_TIMEOUT = 120_000
