/**
 * Shared by the agents suites (agents-profiles-http.test.ts,
 * agents-update-delete-http.test.ts, agents-guardrails-http.test.ts).
 */

/** The full profile as the API returns it. */
export const expectedFullAgent = (agentId: string, displayName = "Support Bot") => ({
  agent_id: agentId,
  display_name: displayName,
  system_prompt: "You help customers with orders.",
  target_url: "https://agent.example.com/chat",
  authority: {
    can_promise: ["a callback within one business day"],
    cannot_promise: ["a full refund", "free shipping forever"]
  },
  scope: { in_scope: ["orders", "shipping"], out_of_scope: ["legal advice"] },
  tone: { target: "friendly and concise", forbidden: ["stupid"] },
  escalation_triggers: ["lawyer"],
  knowledge_sources: [{ kb_id: "faq", description: "Public FAQ", url: "https://example.com/faq", kind: "local" }],
  workflow_definition: { steps: ["verify_identity", "issue_refund"] },
  workflow_requirements: [
    { name: "verify_identity", required_before: ["issue_refund"], sensitive_steps: ["close_account"] }
  ],
  canaries: []
})
