/**
 * The start-up check of configured secrets: the service (as `npm start` runs
 * it) refuses to start when JWT_SECRET, INTERNAL_API_KEY,
 * GATEWAY_ENCRYPTION_KEY or METRICS_TOKEN is a known placeholder or shorter
 * than 32 bytes, with one line naming the variable and how to make one.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { parse } from "yaml"
import { runRefusedChildService } from "./child-service.js"

const STRONG = {
  JWT_SECRET: "9f2c4e7a1b3d5f60718293a4b5c6d7e8f9012345",
  INTERNAL_API_KEY: "0a1b2c3d4e5f60718293a4b5c6d7e8f9aabbccdd",
  GATEWAY_ENCRYPTION_KEY: "f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3",
  METRICS_TOKEN: "1234abcd5678ef901234abcd5678ef90aa55bb66"
}

const refusals: ReadonlyArray<readonly [keyof typeof STRONG, string, string]> = [
  // What docker-compose.yml used to ship as defaults.
  ["JWT_SECRET", "change-me-in-production-please", "a shipped placeholder"],
  ["INTERNAL_API_KEY", "change-me-internal", "a shipped placeholder"],
  ["GATEWAY_ENCRYPTION_KEY", "0123456789abcdef0123456789abcde", "31 bytes"],
  ["METRICS_TOKEN", "changeme", "a placeholder"],
  ["JWT_SECRET", "x".repeat(48), "one character repeated"]
]

describe("start-up check of configured secrets", () => {
  it.scoped(
    "a placeholder or short value of any of the four refuses to start (exit 1) with a message naming it",
    () =>
      Effect.gen(function* () {
        const results = yield* Effect.forEach(
          refusals,
          ([name, value]) => runRefusedChildService({ ...STRONG, [name]: value }),
          { concurrency: 3 }
        )
        refusals.forEach(([name, , label], i) => {
          const { code, output } = results[i]!
          expect(code, `${name} = ${label}:\n${output}`).toBe(1)
          const line = output.split("\n").find((l) => l.includes(`${name} is a placeholder or shorter than 32 bytes`))
          expect(line, output).toBeDefined()
          expect(line).toContain("openssl rand -hex 32")
          // The refused value itself is never printed.
          expect(output).not.toContain(refusals[i]![1])
        })
      }),
    180_000
  )

  it.scoped(
    "strong values (32 bytes or more, not placeholders) start the service",
    () =>
      Effect.gen(function* () {
        const { code, output } = yield* runRefusedChildService(STRONG)
        expect(code, output).toBe("started")
      }),
    120_000
  )

  it("docker-compose.yml ships no usable default secret: each comes from the environment", () => {
    const compose = parse(readFileSync(new URL("../../docker-compose.yml", import.meta.url), "utf8")) as {
      services: Record<string, { environment?: Record<string, string> }>
    }
    for (const [service, definition] of Object.entries(compose.services)) {
      for (const name of Object.keys(STRONG)) {
        const value = definition.environment?.[name]
        if (value === undefined) continue
        // `${NAME:?how to set it}` (compose refuses to start without it) or `${NAME:-}` (unset stays unset).
        expect(value, `${service}.${name}`).toMatch(new RegExp(`^\\$\\{${name}(:\\?.*openssl rand -hex 32.*|:-)\\}$`))
      }
    }
    expect(compose.services["api"]?.environment?.["JWT_SECRET"]).toBeDefined()
  })
})
