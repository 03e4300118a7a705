/** The README's Authentication example, run as pasted against the real service. */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { docBlock, runShell } from "../support/DocBlocks.js"
import { baseUrl, testServer } from "../support/TestServer.js"

layer(testServer("database"), { timeout: "120 seconds", excludeTestServices: true })((it) => {
  it.effect("README Authentication example works when pasted", () =>
    Effect.gen(function* () {
      const output = yield* runShell([docBlock("README.md", "readme-auth-example")], { BASE: yield* baseUrl })
      const lines = output
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>)
      // signup, environments, settings, environments via key, api-keys via key, api-keys via session
      expect(lines).toHaveLength(6)
      expect(lines[0]).toHaveProperty("jwt")
      expect((lines[1]!["environments"] as Array<{ slug: string }>)[0]!.slug).toBe("production")
      expect(lines[2]).toMatchObject({ default_action: "defer", config: { llm_budget: { cap_minor: 5000 } } })
      expect(lines[3]).toHaveProperty("environments")
      expect(lines[4]).toMatchObject({ error: { code: "forbidden_credential" } })
      const keys = lines[5]!["api_keys"] as Array<Record<string, unknown>>
      expect(keys).toHaveLength(1)
      expect(keys[0]!["prefix"]).toMatch(/^gr_live_.{4}$/)
      expect(JSON.stringify(lines[5])).not.toContain("plaintext")
    })
  )
})
