/**
 * The walkthroughs of the README and docs, extracted from the files and run
 * as pasted (bash with curl, node and jq) against a started service, as a
 * reader pastes them into one terminal: the README's first decision (signup,
 * key, agent, policies, a permitted, a denied and a rewritten event, the
 * trace, its review, the receipt verified offline), then the gateway's first
 * calls (docs/gateway.md) through the examples' stub model, and the policy
 * lifecycle (docs/policies.md); and the README's agent loop, which is
 * examples/agent-loop.ts, run by examples/agent-loop-demo.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { promisify } from "node:util"
import { startStubModel } from "../../examples/stub-model.js"
import { docBlock, runShell } from "../support/DocBlocks.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const ROOT = resolve(import.meta.dirname, "../..")

/** Printed between the blocks, to tell their outputs apart. */
const SEPARATOR = "=== next block ==="

/** The JSON values a block printed, one a line or pretty-printed over several (jq). */
const jsonValues = (output: string) => {
  const values: Array<Record<string, unknown>> = []
  let pending = ""
  for (const line of output.split("\n")) {
    pending += line + "\n"
    try {
      values.push(JSON.parse(pending) as Record<string, unknown>)
      pending = ""
    } catch {
      // An unfinished value: the next line continues it.
    }
  }
  expect(pending.trim()).toBe("")
  return values
}

// The gateway walkthrough reaches the stub model on loopback, as `npm start` does with this allowlist.
layer(
  testServer("database", { HTTP_URL_ALLOWLIST: "127.0.0.1,localhost" }),
  SERVER_OPTIONS
)((it) => {
  it.effect(
    "the README walkthrough, then the gateway's (docs/gateway.md) and the policy lifecycle (docs/policies.md), run as pasted into one terminal",
    () =>
      Effect.gen(function* () {
        const stub = yield* Effect.acquireRelease(
          Effect.promise(() => startStubModel()),
          (model) => Effect.promise(() => model.close())
        )
        const stdout = yield* runShell(
          [
            docBlock("README.md", "readme-walkthrough"),
            `echo ${SEPARATOR}`,
            docBlock("docs/gateway.md", "gateway-walkthrough"),
            `echo ${SEPARATOR}`,
            docBlock("docs/policies.md", "policy-lifecycle")
          ],
          { BASE: yield* baseUrl, STUB: stub.baseUrl }
        )
        const [readme, gateway, lifecycle] = stdout.split(`${SEPARATOR}\n`)
        const lines = readme!.trim().split("\n")
        expect(lines[0]).toMatch(/^workspace: \S+$/)
        expect(lines.slice(1)).toEqual([
          "runtime_key",
          "support-bot",
          "no-legal-threats",
          "mask-order-codes",
          "permitted: permit",
          expect.stringMatching(/^denied: deny \(.+\)$/),
          "rewritten: rewrite -> Your order [order code] ships tomorrow.",
          "deny",
          "accepted",
          "accepted",
          "receipt signature valid: true; effect deny"
        ])

        expect(gateway!.trim().split("\n")).toEqual([
          "gpt-4o-mini",
          "permitted: You said: Where is my parcel?",
          "rewritten: You said: Where is [order code]?",
          "denied: guardrail_denied"
        ])
        // Each call reached the provider: the denial was of the reply, after it answered.
        expect(stub.requests).toHaveLength(3)

        const [validated, created, tested, evaluated, impact, enabled, audit, verified, versions, rolledBack] =
          jsonValues(lifecycle!)
        expect(validated).toEqual({ valid: true, policy_id: "no-voucher", errors: [] })
        expect(created).toMatchObject({ id: "no-voucher", version: 1, enabled: false })
        expect(tested).toMatchObject({ passed: 1, failed: 0 })
        expect(evaluated).toMatchObject({ effect: "deny", reason: "Never promise vouchers" })
        // The decisions made above, replayed with the policy on.
        const progress = impact!["progress"] as { replayed: number; total: number }
        expect(impact).toMatchObject({ status: "completed" })
        expect(progress.replayed).toBeGreaterThan(0)
        expect(progress.replayed).toBe(progress.total)
        expect(enabled).toMatchObject({ id: "no-voucher", version: 1, enabled: true })
        expect((audit!["audit_events"] as Array<{ action: string }>).map((event) => event.action)).toEqual([
          "policy.update",
          "policy.create"
        ])
        expect(verified).toMatchObject({ valid: true })
        expect(versions).toMatchObject({ versions: [{ version: 1, enabled: false }] })
        expect(rolledBack).toMatchObject({ id: "no-voucher", version: 2, enabled: false })
      }).pipe(Effect.scoped),
    // Some forty commands, each a process: minutes on a loaded machine.
    { timeout: 300_000 }
  )

  it.effect(
    "the README's agent loop is examples/agent-loop.ts, and it answers, blocks and rewrites",
    () =>
      Effect.gen(function* () {
        const example = readFileSync(resolve(ROOT, "examples/agent-loop.ts"), "utf8")
        expect(docBlock("README.md", "readme-agent-loop")).toBe(
          example.replace('"../src/client/index.js"', '"guardrail-service/client"')
        )
        const base = yield* baseUrl
        const { stdout } = yield* Effect.promise(() =>
          promisify(execFile)("node", ["--import", "tsx", "examples/agent-loop-demo.ts"], {
            cwd: ROOT,
            env: { ...process.env, GUARDRAIL_URL: base },
            encoding: "utf8"
          })
        )
        expect(stdout.split("\n").filter((line) => line.startsWith("  -> "))).toEqual([
          "  -> You said: Where is my order?",
          "  -> I can't help with that.",
          "  -> Tool said: sent 5 to friend",
          "  -> Tool said: Not allowed: Money goes to known accounts only",
          "  -> Tool said: The customer's code is [removed].",
          "  -> I can't say that; a colleague will follow up."
        ])
      }),
    { timeout: 300_000 }
  )
})
