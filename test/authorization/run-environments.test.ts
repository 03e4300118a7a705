/**
 * The remembered environments of runs (each event naming a run checks it)
 * are bounded and fair between workspaces: one workspace naming new run ids
 * without end churns its own share, and every other workspace's runs stay
 * remembered (before, oldest-first eviction let it push out everyone's, and
 * each of their events read its run again). Within a workspace the least
 * recently used run goes first.
 */
import { describe, expect, it } from "@effect/vitest"
import { makeRunEnvironments } from "../../src/authorization/RunEnvironments.js"

const BOUND = 100_000

describe("remembered run environments", () => {
  it("a workspace naming 100,000 new run ids keeps to its share; another workspace's runs stay", () => {
    const runs = makeRunEnvironments()
    for (let i = 0; i < 10; i += 1) runs.remember("ws_quiet", `run_${i}`, "env_quiet")
    for (let i = 0; i < BOUND; i += 1) runs.remember("ws_busy", `run_${i}`, i % 2 === 0 ? "env_busy" : null)
    for (let i = 0; i < 10; i += 1) expect(runs.peek("ws_quiet", `run_${i}`), `run_${i}`).toBe("env_quiet")
    // The busy workspace still has what it named last.
    expect(runs.peek("ws_busy", `run_${BOUND - 2}`)).toBe("env_busy")
    expect(runs.peek("ws_busy", `run_${BOUND - 1}`)).toBeNull()
    expect(runs.peek("ws_busy", "run_0")).toBeUndefined()
  })

  it("within a workspace, a run read lately outlives one not read", () => {
    const runs = makeRunEnvironments(3)
    runs.remember("ws", "a", "env")
    runs.remember("ws", "b", "env")
    runs.remember("ws", "c", "env")
    expect(runs.peek("ws", "a")).toBe("env")
    runs.remember("ws", "d", "env")
    expect(runs.peek("ws", "b")).toBeUndefined()
    expect(["a", "c", "d"].map((run) => runs.peek("ws", run))).toEqual(["env", "env", "env"])
  })
})
