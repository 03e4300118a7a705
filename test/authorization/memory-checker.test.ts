/** Memory checker: untrusted data must not be written to an agent's memory unreviewed. */
import { describe, expect, it } from "@effect/vitest"
import { memoryChecker } from "../../src/authorization/checkers/Memory.js"
import type { CheckContext, ParamSource } from "../../src/authorization/Pipeline.js"
import type { ToolMetadataRow } from "../../src/catalog/Repo.js"
import { label } from "./label-fixtures.js"

const tools = new Map<string, ToolMetadataRow>(
  [
    {
      tool: "save_note",
      enabled: true,
      version: 1,
      metadata: { tool: "save_note", reversible: true, side_effect: "memory" }
    },
    {
      tool: "remember",
      enabled: true,
      version: 1,
      metadata: { tool: "remember", reversible: true, side_effect: "write", memory: true }
    },
    {
      tool: "send_email",
      enabled: true,
      version: 1,
      metadata: { tool: "send_email", reversible: false, side_effect: "email" }
    },
    {
      tool: "old_note",
      enabled: false,
      version: 1,
      metadata: { tool: "old_note", reversible: true, side_effect: "memory" }
    }
  ].map((row) => [row.tool, row])
)

const labelPolicies = new Map(
  [
    label("user", { integrity: "high" }),
    label("email", { trust: "high" }), // vouched for: overrides the default
    label("partner", { trust: 0.2 }),
    label("forum", { integrity: "LOW" }),
    label("web", { integrity: "high", enabled: false }) // disabled: the default (untrusted) stays
  ].map((row) => [row.origin, row])
)

const from = (origin: string, path = "text"): ParamSource => ({ path, origin, source_id: `${origin}-1` })

const context = (operation: string, sources?: ReadonlyArray<ParamSource>): CheckContext => ({
  agentId: "support-bot",
  kind: "output.proposed",
  action: { operation, params: { text: "remember this" }, sources },
  agent: undefined,
  policies: [],
  labelPolicies,
  tools,
  granted: false
})

// `found` lists the requirement ids, in order; each is a medium defer.
const cases: ReadonlyArray<{
  readonly name: string
  readonly context: CheckContext
  readonly found: ReadonlyArray<string>
}> = [
  { name: "memory.write from the user", context: context("memory.write", [from("user")]), found: [] },
  { name: "memory.write from system (unlabelled)", context: context("memory.write", [from("system")]), found: [] },
  { name: "memory.write from web", context: context("memory.write", [from("web")]), found: ["memory:web"] },
  {
    name: "memory.write from tool output",
    context: context("memory.write", [from("tool_output")]),
    found: ["memory:tool_output"]
  },
  {
    name: "memory.write mixing user, retrieval and email (vouched for)",
    context: context("memory.write", [from("user"), from("retrieval"), from("email")]),
    found: ["memory:retrieval"]
  },
  {
    name: "trust below 0.5 on a label",
    context: context("memory.write", [from("partner")]),
    found: ["memory:partner"]
  },
  { name: "integrity LOW, any case", context: context("memory.write", [from("forum")]), found: ["memory:forum"] },
  { name: "a side_effect: memory tool", context: context("save_note", [from("web")]), found: ["memory:web"] },
  { name: "a memory: true tool", context: context("remember", [from("email"), from("web")]), found: ["memory:web"] },
  { name: "a disabled memory tool is not a memory write", context: context("old_note", [from("web")]), found: [] },
  { name: "a tool that does not write memory", context: context("send_email", [from("web")]), found: [] },
  { name: "a reply", context: context("reply", [from("web")]), found: [] },
  { name: "a memory write without source labels", context: context("memory.write"), found: [] },
  {
    name: "one finding per origin",
    context: context("memory.write", [from("web", "a"), from("web", "b")]),
    found: ["memory:web"]
  }
]

describe("memory checker", () => {
  it.each(cases)("$name", ({ context, found }) => {
    const findings = memoryChecker.check(context)
    expect(findings.map((f) => f.requirement_id)).toEqual(found)
    for (const finding of findings) expect(finding).toMatchObject({ effect: "defer", severity: "medium" })
  })

  it("names the origin and its paths", () => {
    const [finding] = memoryChecker.check(
      context("memory.write", [from("web", "a"), from("user", "b"), from("web", "c")])
    )
    expect(finding?.reason).toBe('Memory write carries data from untrusted origin "web".')
    expect(finding?.evidence).toEqual({ origin: "web", tool: "memory.write", paths: ["a", "c"] })
  })
})
