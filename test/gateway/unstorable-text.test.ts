/**
 * Text PostgreSQL's jsonb refuses (a NUL character, an unpaired surrogate) in what the service did not
 * refuse itself: a provider's answer. A request's own JSON with such text is 400 up front; an answer
 * carrying it is the provider's, and the client gets it as sent, while the decision on it is recorded
 * with U+FFFD in its place. Before, the decision could not be recorded (an ERROR in the log), and the
 * gateway answered 403 guardrail_deferred "The decision could not be recorded" to a benign answer.
 */
import { afterAll, describe, expect, it as plainIt, layer } from "@effect/vitest"
import { Effect } from "effect"
import { storableJsonText } from "../../src/platform/Json.js"
import { queryDatabase } from "../support/Database.js"
import { createPolicy } from "../support/Events.js"
import { until } from "../support/Eventually.js"
import { SERVER_OPTIONS, TestDatabaseUrl, testServerWithDatabase } from "../support/TestServer.js"
import { GATEWAY_SETTINGS, gatewayTenant } from "./gateway-helpers.js"
import { startStubUpstream } from "./stub-upstream.js"

const stub = await startStubUpstream()
afterAll(() => stub.close())

const ANSWERS = ["hi\u0000there", "half \ud83d of a pair", "low \udc00 alone"]

layer(testServerWithDatabase("database", GATEWAY_SETTINGS), SERVER_OPTIONS)("gateway: unstorable text", (it) => {
  it.effect("an answer with a NUL or an unpaired surrogate reaches the client; its decision is recorded", () =>
    Effect.gen(function* () {
      const { base, gateway, owner } = yield* gatewayTenant(stub.url)
      yield* createPolicy(base, owner, "no-secrets", { value: "forbidden", appliesTo: ["output.proposed"] })
      for (const answer of ANSWERS) {
        const response = yield* Effect.promise(() =>
          fetch(`${gateway.routeBase}/chat_style/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${owner.jwt}`, "content-type": "application/json" },
            // The stub answers the JSON string after `say-json:` (a request may not carry the text itself).
            body: JSON.stringify({
              model: `say-json:${JSON.stringify(answer)}`,
              messages: [{ role: "user", content: "hi" }]
            }),
            signal: AbortSignal.timeout(15_000)
          })
        )
        const body = (yield* Effect.promise(() => response.json())) as {
          choices: ReadonlyArray<{ message: { content: string } }>
        }
        expect(response.status).toBe(200)
        expect(body.choices[0]!.message.content).toBe(answer)
      }
      const url = yield* TestDatabaseUrl
      const recorded = yield* until(
        Effect.filterOrFail(
          queryDatabase<{ content: string; decision: string }>(
            url,
            `select payload->'request'->'action'->>'content' as content, decision from traces
             where workspace_id = $1 and payload->'request'->>'kind' = 'output.proposed' order by created_at`,
            [owner.workspaceId]
          ),
          (rows) => rows.length === ANSWERS.length
        ),
        "10 seconds"
      )
      expect(recorded).toEqual(
        ANSWERS.map((answer) => ({ content: answer.toWellFormed().replace("\u0000", "\ufffd"), decision: "permit" }))
      )
    })
  )
})

describe("storableJsonText", () => {
  plainIt("replaces NUL and unpaired surrogates one for one, and nothing that only looks like them", () => {
    const value = {
      a: "x\u0000y",
      b: "\ud83d\ude00 pair",
      c: "\ud800",
      d: "\udfff!",
      e: "\\u0000 as text",
      f: "\\\u0000"
    }
    const stored = JSON.parse(storableJsonText(value)) as Record<string, string>
    expect(stored).toEqual({
      a: "x\ufffdy",
      b: "\ud83d\ude00 pair",
      c: "\ufffd",
      d: "\ufffd!",
      e: "\\u0000 as text",
      f: "\\\ufffd"
    })
    for (const key of Object.keys(value)) expect(stored[key]!.length).toBe(value[key as keyof typeof value].length)
  })
})
