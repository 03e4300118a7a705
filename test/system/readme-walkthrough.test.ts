/**
 * The README's "First decision in five minutes" block, extracted from the
 * README and run as pasted (bash with curl and node) against a started
 * service: signup, key, agent, policies, a permitted, a denied and a
 * rewritten event, the trace, its review, and the receipt verified offline.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { promisify } from "node:util"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const walkthrough = () => {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8")
  const start = readme.indexOf("<!-- readme-walkthrough:start -->")
  const end = readme.indexOf("<!-- readme-walkthrough:end -->")
  expect(start).toBeGreaterThan(-1)
  const block = readme.slice(start, end)
  return block.slice(block.indexOf("```sh") + 5, block.lastIndexOf("```"))
}

layer(
  testServer("database"),
  SERVER_OPTIONS
)((it) => {
  it.effect("the README walk-through runs as pasted and prints each step's outcome", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      // Asynchronously: the server answering the block runs in this process.
      const { stdout } = yield* Effect.promise(() =>
        promisify(execFile)("bash", ["-euo", "pipefail", "-c", walkthrough()], {
          env: { ...process.env, BASE: base },
          encoding: "utf8",
          timeout: 90_000
        })
      )
      const lines = stdout.trim().split("\n")
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
    })
  )
})
