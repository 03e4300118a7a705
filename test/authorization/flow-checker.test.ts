/** Flow checker: untrusted data must not drive consequential tools; confidential data must not leave. */
import { describe, expect, it } from "@effect/vitest"
import { flowChecker } from "../../src/authorization/checkers/Flow.js"
import type { CheckContext, ParamSource } from "../../src/authorization/Pipeline.js"
import type { ToolMetadataRow } from "../../src/catalog/Repo.js"
import { label } from "./label-fixtures.js"

const tool = (name: string, reversible: boolean, side_effect: string): ToolMetadataRow => ({
  tool: name,
  enabled: true,
  version: 1,
  metadata: { tool: name, reversible, side_effect }
})

const tools = new Map(
  [
    tool("send_email", false, "email"),
    tool("create_ticket", true, "write"),
    tool("delete_account", false, "delete"),
    tool("search_docs", true, "none"),
    tool("http_get", true, "none")
  ].map((row) => [row.tool, row])
)

const labelPolicies = new Map(
  [
    label("user", { integrity: "high", trust: 1 }),
    label("crm", { confidentiality: "confidential", integrity: "high" }),
    label("vault", { confidentiality: "Secret", integrity: "high" }),
    label("partner", { trust: 0.3 }),
    label("forum", { integrity: "untrusted" }),
    label("email", { integrity: "high" }), // vouched for: overrides the default
    label("intranet", { integrity: "untrusted", enabled: false }), // disabled: ignored
    label("retrieval", { confidentiality: "high" }) // says nothing about integrity: default applies
  ].map((row) => [row.origin, row])
)

const from = (origin: string, path = "body"): ParamSource => ({ path, origin, source_id: `${origin}-1` })

const context = (operation: string, sources?: ReadonlyArray<ParamSource>): CheckContext => ({
  agentId: "support-bot",
  kind: "output.proposed",
  action: { operation, content: "text", params: { body: "text" }, sources },
  agent: undefined,
  policies: [],
  labelPolicies,
  tools,
  granted: false
})

// `found` lists [requirement_id, effect, severity] per finding, in order.
const cases: ReadonlyArray<{
  readonly name: string
  readonly context: CheckContext
  readonly found: ReadonlyArray<readonly [string, string, string]>
}> = [
  {
    name: "web data into a reversible side-effecting tool is deferred",
    context: context("create_ticket", [from("web")]),
    found: [["flow:integrity:web->create_ticket", "defer", "high"]]
  },
  {
    name: "web data into an irreversible tool is denied",
    context: context("delete_account", [from("web")]),
    found: [["flow:integrity:web->delete_account", "deny", "high"]]
  },
  {
    name: "web data into a read-only tool is fine",
    context: context("search_docs", [from("web")]),
    found: []
  },
  {
    name: "user data into an irreversible tool is fine",
    context: context("delete_account", [from("user")]),
    found: []
  },
  {
    name: "trust below 0.5 is untrusted",
    context: context("create_ticket", [from("partner")]),
    found: [["flow:integrity:partner->create_ticket", "defer", "high"]]
  },
  {
    name: "integrity untrusted on a label",
    context: context("create_ticket", [from("forum")]),
    found: [["flow:integrity:forum->create_ticket", "defer", "high"]]
  },
  {
    name: "a label policy vouching for email overrides the default",
    context: context("create_ticket", [from("email")]),
    found: []
  },
  {
    name: "a disabled label policy is ignored",
    context: context("create_ticket", [from("intranet")]),
    found: []
  },
  {
    name: "a label silent on integrity keeps the default (retrieval)",
    context: context("create_ticket", [from("tool_output"), from("retrieval")]),
    found: [
      ["flow:integrity:tool_output->create_ticket", "defer", "high"],
      ["flow:integrity:retrieval->create_ticket", "defer", "high"]
    ]
  },
  {
    name: "confidential data to an outbound tool is denied",
    context: context("send_email", [from("crm")]),
    found: [["flow:confidentiality:crm->send_email", "deny", "critical"]]
  },
  {
    name: "confidential data to a non-outbound tool is fine",
    context: context("create_ticket", [from("crm")]),
    found: []
  },
  {
    name: "an unregistered tool named like a sender is an outbound sink",
    context: context("post_to_slack", [from("crm")]),
    found: [["flow:confidentiality:crm->post_to_slack", "deny", "critical"]]
  },
  {
    name: "a read-only tool named http_* is outbound but not consequential",
    context: context("http_get", [from("crm"), from("web")]),
    found: [["flow:confidentiality:crm->http_get", "deny", "critical"]]
  },
  {
    name: "secret data in a reply is deferred to a human",
    context: context("reply", [from("vault")]),
    found: [["flow:confidentiality:vault->reply", "defer", "high"]]
  },
  { name: "merely confidential data in a reply is fine", context: context("reply", [from("crm")]), found: [] },
  { name: "web data in a reply is fine", context: context("reply", [from("web")]), found: [] },
  {
    name: "untrusted and confidential data into an outbound irreversible tool",
    context: context("send_email", [from("web", "to"), from("crm", "body")]),
    found: [
      ["flow:integrity:web->send_email", "deny", "high"],
      ["flow:confidentiality:crm->send_email", "deny", "critical"]
    ]
  },
  {
    name: "one finding per origin",
    context: context("create_ticket", [from("web", "title"), from("web", "body")]),
    found: [["flow:integrity:web->create_ticket", "defer", "high"]]
  },
  { name: "no source labels", context: context("delete_account"), found: [] },
  { name: "an unregistered, inoffensive tool", context: context("lookup_order", [from("web")]), found: [] }
]

describe("flow checker", () => {
  it.each(cases)("$name", ({ context, found }) => {
    const findings = flowChecker.check(context)
    expect(findings.map((f) => [f.requirement_id, f.effect, f.severity])).toEqual(found)
  })

  it("lists every path of the origin in the evidence", () => {
    const [finding] = flowChecker.check(context("create_ticket", [from("web", "title"), from("web", "body")]))
    expect(finding?.evidence).toEqual({
      origin: "web",
      tool: "create_ticket",
      paths: ["title", "body"],
      labelled: false,
      reversible: true
    })
    expect(finding?.reason).toBe('Data from untrusted origin "web" would drive tool create_ticket.')
  })

  it("says which confidentiality level leaked", () => {
    const [finding] = flowChecker.check(context("send_email", [from("crm")]))
    expect(finding?.evidence).toEqual({
      origin: "crm",
      tool: "send_email",
      paths: ["body"],
      confidentiality: "confidential"
    })
  })
})
