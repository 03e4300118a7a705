/**
 * The runnable examples (examples/openai-agents.ts, examples/ai-sdk.ts) run
 * as a user would run them against `npm start`, here against a test server:
 * each sets up its workspace over HTTP, runs its agent on the stub model and
 * prints what was answered and what was blocked.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { resolve } from "node:path"
import { promisify } from "node:util"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const ROOT = resolve(import.meta.dirname, "../..")

/** A script starts its own node with tsx, signs up and runs a dozen decisions: over a minute on a loaded machine. */
const EXAMPLE_TIMEOUT = { timeout: 300_000 }

const runExample = (file: string) =>
  Effect.flatMap(baseUrl, (base) =>
    Effect.promise(() =>
      promisify(execFile)("node", ["--import", "tsx", file], {
        cwd: ROOT,
        env: { ...process.env, GUARDRAIL_URL: base }
      }).then(({ stdout }) => stdout.split("\n").filter((line) => line.startsWith("  -> ")))
    )
  )

layer(testServer("database"), SERVER_OPTIONS)("examples", (it) => {
  it.effect(
    "the OpenAI Agents SDK example answers, and blocks what the policies deny",
    () =>
      Effect.map(runExample("examples/openai-agents.ts"), (outcomes) =>
        expect(outcomes).toEqual([
          "  -> answered: You said: Where is my order?",
          "  -> blocked (deny: no-override)",
          "  -> blocked (deny: no-discount-code)",
          "  -> answered: Tool said: sent 5 to friend",
          "  -> blocked (deny: no-attacker)"
        ])
      ),
    EXAMPLE_TIMEOUT
  )

  it.effect(
    "the AI SDK example answers, rewrites a tool's secret, and blocks what the policies deny",
    () =>
      Effect.map(runExample("examples/ai-sdk.ts"), (outcomes) =>
        expect(outcomes).toEqual([
          "  -> answered: You said: Where is my order?",
          "  -> blocked (deny: no-override)",
          "  -> answered: Tool said: The customer's code is [removed].",
          "  -> blocked (deny: no-attacker)",
          "  -> blocked (deny: no-discount-code)"
        ])
      ),
    EXAMPLE_TIMEOUT
  )
})
