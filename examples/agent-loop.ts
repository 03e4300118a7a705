import { createGuardrailClient, GuardrailError } from "../src/client/index.js"

/** Your model: its next step is a tool call or a reply. */
export interface Model {
  next(messages: Array<{ role: string; content: string }>): Promise<{
    toolCall?: { name: string; args: Record<string, unknown> }
    text: string
  }>
}
export type Tools = Record<string, (args: Record<string, unknown>) => Promise<string>>

const guard = createGuardrailClient({
  baseUrl: process.env.GUARDRAIL_URL ?? "http://localhost:8080",
  apiKey: process.env.GUARDRAIL_API_KEY!,
  agentId: "support-bot"
})

export async function answer(userText: string, model: Model, tools: Tools): Promise<string> {
  const run = await guard.createRun({ agent_id: "support-bot", kind: "chat_session" })
  const input = await guard.decide({
    kind: "input.received",
    run_id: run.id,
    action: { operation: "user_message", content: userText }
  })
  if (input.effect === "deny") return "I can't help with that."
  const messages = [{ role: "user", content: userText }]
  for (let step = 0; step < 8; step++) {
    const next = await model.next(messages)
    if (next.toolCall) {
      const { name, args } = next.toolCall
      const call = await guard.decide({
        kind: "output.proposed",
        run_id: run.id,
        action: { operation: name, params: args }
      })
      await guard.appendRunEvent(run.id, { kind: "tool_call", label: name })
      const tool = tools[name]
      if (call.effect !== "permit" || tool === undefined) {
        messages.push({ role: "tool", content: `Not allowed: ${tool === undefined ? "no such tool" : call.reason}` })
        continue
      }
      const output = await tool(args)
      const result = await guard.decide({
        kind: "tool.result",
        run_id: run.id,
        action: { operation: name, content: output }
      })
      if (result.effect === "deny") break
      messages.push({ role: "tool", content: result.effect === "rewrite" ? String(result.transformed_value) : output })
      continue
    }
    const reply = await guard.decide({
      kind: "output.proposed",
      run_id: run.id,
      action: { operation: "reply", content: next.text }
    })
    await guard.updateRun(run.id, { status: "completed" })
    if (reply.effect === "permit") return next.text
    if (reply.effect === "rewrite") return String(reply.transformed_value)
    return "I can't say that; a colleague will follow up." // deny, or defer awaiting a human
  }
  await guard.updateRun(run.id, { status: "failed" })
  return "Something went wrong."
}

/** The service out of reach, or a call refused: fail closed, as for a `defer`. */
export const answerOrDefer = (userText: string, model: Model, tools: Tools) =>
  answer(userText, model, tools).catch((error: unknown) => {
    if (error instanceof GuardrailError) return `A colleague will follow up (${error.code}).`
    throw error
  })
