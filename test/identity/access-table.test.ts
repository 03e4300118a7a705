/** The access rules: table-driven checks of `checkAccess`, and the documented table equals the code's. */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { accessByGroup, checkAccess } from "../../src/identity/Access.js"

describe("checkAccess", () => {
  const cases = [
    {
      caller: "runtime_key",
      role: "member",
      group: "events",
      method: "POST",
      endpoint: "authorize",
      verdict: "allowed"
    },
    { caller: "runtime_key", role: "member", group: "runs", method: "POST", endpoint: "createRun", verdict: "allowed" },
    {
      caller: "runtime_key",
      role: "member",
      group: "apiKeys",
      method: "GET",
      endpoint: "listApiKeys",
      verdict: "runtime_key_not_allowed"
    },
    {
      caller: "runtime_key",
      role: "member",
      group: "settings",
      method: "PATCH",
      endpoint: "updateSettings",
      verdict: "runtime_key_not_allowed"
    },
    {
      caller: "runtime_key",
      role: "member",
      group: "team",
      method: "GET",
      endpoint: "listMembers",
      verdict: "runtime_key_not_allowed"
    },
    {
      caller: "runtime_key",
      role: "member",
      group: "providerConnections",
      method: "GET",
      endpoint: "list",
      verdict: "runtime_key_not_allowed"
    },
    {
      caller: "runtime_key",
      role: "member",
      group: "policies",
      method: "GET",
      endpoint: "listPolicies",
      verdict: "allowed"
    },
    {
      caller: "runtime_key",
      role: "member",
      group: "policies",
      method: "POST",
      endpoint: "createPolicy",
      verdict: "runtime_key_not_allowed"
    },
    {
      caller: "user",
      role: "member",
      group: "apiKeys",
      method: "GET",
      endpoint: "listApiKeys",
      verdict: "role_too_low"
    },
    { caller: "user", role: "admin", group: "apiKeys", method: "POST", endpoint: "createApiKey", verdict: "allowed" },
    { caller: "user", role: "member", group: "settings", method: "GET", endpoint: "getSettings", verdict: "allowed" },
    {
      caller: "user",
      role: "member",
      group: "settings",
      method: "PATCH",
      endpoint: "updateSettings",
      verdict: "role_too_low"
    },
    {
      caller: "user",
      role: "member",
      group: "team",
      method: "POST",
      endpoint: "createInvite",
      verdict: "role_too_low"
    },
    { caller: "user", role: "member", group: "team", method: "POST", endpoint: "createWorkspace", verdict: "allowed" },
    { caller: "user", role: "owner", group: "unknownGroup", method: "GET", endpoint: "x", verdict: "allowed" },
    { caller: "user", role: "admin", group: "unknownGroup", method: "GET", endpoint: "x", verdict: "role_too_low" },
    {
      caller: "runtime_key",
      role: "member",
      group: "unknownGroup",
      method: "GET",
      endpoint: "x",
      verdict: "runtime_key_not_allowed"
    }
  ] as const
  for (const c of cases) {
    it(`${c.caller} (${c.role}) ${c.method} ${c.group}.${c.endpoint} -> ${c.verdict}`, () => {
      expect(checkAccess({ kind: c.caller, role: c.role }, c)).toBe(c.verdict)
    })
  }
})

describe("docs/authentication.md", () => {
  it("lists exactly the access table of src/identity/Access.ts", () => {
    const doc = readFileSync(new URL("../../docs/authentication.md", import.meta.url), "utf8")
    const table = doc.slice(doc.indexOf("<!-- access-table:start -->"), doc.indexOf("<!-- access-table:end -->"))
    const rows = table
      .split("\n")
      .filter((line) => line.startsWith("| ") && !line.startsWith("| Group") && !line.startsWith("|---"))
      .map((line) => line.split("|").map((cell) => cell.trim()))
      .map(([, group, , runtimeKey, read, write]) => ({ group, runtimeKey, read, write }))
    expect(rows).toEqual(
      Object.entries(accessByGroup).map(([group, access]) => ({
        group,
        runtimeKey: access.runtimeKey,
        read: access.read,
        write: access.write
      }))
    )
  })
})
