import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    setupFiles: ["test/support/resetEffectVitest.ts"],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: "forks",
    // Files share their worker process, so the dependencies (effect,
    // platform, kafkajs, pg) load once per worker, not once per file: that
    // collect was ~2.5 s a file, a third of the suite's time. Every file
    // builds its own layers (own database, topics and server) and closes them
    // in its afterAll; test/support/resetEffectVitest.ts undoes the one
    // shared state a file leaves behind.
    isolate: false,
    // Two cores: run two suites at a time; each suite owns its database and topics.
    maxWorkers: 2,
    minWorkers: 1,
    reporters: ["default"]
  }
})
