import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: "forks",
    // Two cores: run two suites at a time; each suite owns its database and topics.
    maxWorkers: 2,
    minWorkers: 1,
    reporters: ["default"]
  }
})
