/**
 * A target's answer is outside input: whatever valid JSON it sends, the job
 * completes (src/redteam/Targets.ts). Text PostgreSQL cannot store (a NUL
 * character, an unpaired surrogate) is kept as U+FFFD; an answer nested
 * deeper than MAX_ANSWER_DEPTH, or with more than MAX_TOOL_CALLS tool calls,
 * makes that attack an `error`. Before, each of them failed the whole job.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { MAX_ANSWER_DEPTH, MAX_TOOL_CALLS } from "../../src/redteam/Targets.js"
import { tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"
import { agentYaml, createAgent, dispatch, stubTarget, TargetRequest, waitForJob } from "./redteam-helpers.js"

const server = testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1" })

const chatAnswer = (content: string, toolCalls: ReadonlyArray<unknown>) => ({
  status: 200,
  body: { choices: [{ message: { content, tool_calls: toolCalls } }] }
})

/** Arguments as chat completions send them (a JSON string), nested 100,000 arrays deep. */
const deepArguments = `${"[".repeat(100_000)}${"]".repeat(100_000)}`

layer(server, SERVER_OPTIONS)("red-team targets answering odd JSON", (it) => {
  it.effect("NUL and unpaired surrogates are kept as U+FFFD; too deep or too many tool calls is an error", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const owner = yield* tenant(yield* baseUrl)
        // The kind of answer follows from the last user turn, so every run answers each attack alike.
        const odd = yield* stubTarget((_, body) => {
          const last = Schema.decodeUnknownSync(TargetRequest)(body).messages.at(-1)?.content ?? ""
          const kind = last.length % 3
          const send = (args: unknown) => ({ type: "function", function: { name: "send_email", arguments: args } })
          return kind === 0
            ? chatAnswer("Sure\u0000 thing \ud800", [send({ to: "a\u0000b" })])
            : kind === 1
              ? chatAnswer("Sure", [send(deepArguments)])
              : chatAnswer(
                  "Sure",
                  Array.from({ length: MAX_TOOL_CALLS + 1 }, () => send({ to: "x@example.com" }))
                )
        })
        const target = `${odd.url}/v1/chat/completions`
        yield* createAgent(owner, agentYaml("odd-bot", target))
        const job = yield* dispatch(owner, { profile: "quick", target_url: target, agent_id: "odd-bot" })
        const done = yield* waitForJob(owner, job.id)
        expect(done.job.attacks).toBe(20)
        expect(done.job.error).toBeNull()

        const texts = done.sessions.flatMap((session) => session.events.map((event) => event.content_text))
        expect(texts.some((text) => text.includes("Sure\uFFFD thing \uFFFD"))).toBe(true)
        const errors = done.sessions.flatMap((session) => (session.error === null ? [] : [session.error]))
        expect(errors.some((error) => error.includes(`deeper than ${MAX_ANSWER_DEPTH} levels`))).toBe(true)
        expect(errors.some((error) => error.includes(`${MAX_TOOL_CALLS + 1} tool calls`))).toBe(true)
      })
    )
  )
})
