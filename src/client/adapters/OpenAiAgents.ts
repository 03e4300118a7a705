/**
 * `guardrail-service/openai-agents`: the service as guardrails of the OpenAI
 * Agents SDK (`@openai/agents` 0.14):
 * - `guardrailInput(options)`: an input guardrail deciding the user's input (`input.received`);
 * - `guardrailOutput(options)`: an output guardrail deciding the final reply (`output.proposed`);
 * - `guardTool(tool, options)`: the tool with tool guardrails that decide each call before it runs
 *   (`output.proposed`, the tool's name as operation) and screen its result (`tool.result`).
 * A blocking decision (`deny`, and `defer` unless `blockOn` says otherwise) trips the SDK's tripwire
 * (`InputGuardrailTripwireTriggered`, `OutputGuardrailTripwireTriggered`, `ToolInputGuardrailTripwireTriggered`,
 * ...) whose `outputInfo` carries the decision's effect, reason, trace id and findings. A `rewrite` of a tool's
 * result replaces what the model sees. The SDK's guardrails cannot change the user's input or the reply, so
 * a `rewrite` there is reported in `outputInfo` and does not trip.
 */
import type {
  FunctionTool,
  InputGuardrail,
  AgentInputItem,
  OutputGuardrail,
  ToolGuardrailFunctionOutput,
  ToolInputGuardrailDefinition,
  ToolInputParameters,
  ToolOutputGuardrailDefinition
} from "@openai/agents"
import {
  authorizeToolCall,
  blocks,
  GuardrailDenied,
  type GuardrailAdapterOptions,
  paramsOf,
  rewrittenText,
  screen,
  summaryOf,
  textOf
} from "./Screening.js"

export { GuardrailDenied, type GuardrailAdapterOptions } from "./Screening.js"

const NAME = "guardrail-service"

/** The text of the newest user message of an agent's input (a string, or model items). */
export const userTextOf = (input: string | ReadonlyArray<AgentInputItem>): string => {
  if (typeof input === "string") return input
  for (let index = input.length - 1; index >= 0; index--) {
    const item = input[index]!
    if (!("role" in item) || item.role !== "user") continue
    const content: unknown = item.content
    if (typeof content === "string") return content
    if (Array.isArray(content)) {
      return content
        .map((part: unknown) =>
          typeof part === "object" && part !== null && "text" in part && typeof part.text === "string" ? part.text : ""
        )
        .join("\n")
    }
  }
  return ""
}

/** An input guardrail: the user's input decided as `input.received` before the model runs. */
export const guardrailInput = (options: GuardrailAdapterOptions): InputGuardrail => ({
  name: `${NAME}:input`,
  // Decided before the model is called: a blocked input never reaches it.
  runInParallel: false,
  execute: async ({ input }) => {
    const decision = await screen(options, "input.received", { operation: "user_message", content: userTextOf(input) })
    return { tripwireTriggered: blocks(options, decision), outputInfo: summaryOf(decision) }
  }
})

/** An output guardrail: the agent's final reply decided as `output.proposed` (operation `reply`). */
export const guardrailOutput = (options: GuardrailAdapterOptions): OutputGuardrail => ({
  name: `${NAME}:output`,
  execute: async ({ agentOutput }) => {
    const decision = await screen(options, "output.proposed", { operation: "reply", content: textOf(agentOutput) })
    return { tripwireTriggered: blocks(options, decision), outputInfo: summaryOf(decision) }
  }
})

const allow = (outputInfo: unknown): ToolGuardrailFunctionOutput => ({ behavior: { type: "allow" }, outputInfo })
const trip = (outputInfo: unknown): ToolGuardrailFunctionOutput => ({
  behavior: { type: "throwException" },
  outputInfo
})

/**
 * The tool with guardrails of the service: each call is decided before it runs (and, with
 * `requirePermitReceipt`, runs only on a verified permit receipt); its result is screened as `tool.result`.
 */
export const guardTool = <Context, Parameters extends ToolInputParameters, Result>(
  tool: FunctionTool<Context, Parameters, Result>,
  options: GuardrailAdapterOptions
): FunctionTool<Context, Parameters, Result> => {
  const beforeCall: ToolInputGuardrailDefinition<Context> = {
    type: "tool_input",
    name: `${NAME}:tool-call`,
    run: async ({ toolCall }) => {
      try {
        return allow(summaryOf(await authorizeToolCall(options, tool.name, paramsOf(toolCall.arguments))))
      } catch (error) {
        if (error instanceof GuardrailDenied) return trip(summaryOf(error.decision))
        throw error
      }
    }
  }
  const afterCall: ToolOutputGuardrailDefinition<Context> = {
    type: "tool_output",
    name: `${NAME}:tool-result`,
    run: async ({ output }) => {
      const decision = await screen(options, "tool.result", { operation: tool.name, content: textOf(output) })
      if (blocks(options, decision)) return trip(summaryOf(decision))
      const rewritten = rewrittenText(decision)
      return rewritten === undefined
        ? allow(summaryOf(decision))
        : { behavior: { type: "rejectContent", message: rewritten }, outputInfo: summaryOf(decision) }
    }
  }
  return {
    ...tool,
    inputGuardrails: [...(tool.inputGuardrails ?? []), beforeCall],
    outputGuardrails: [...(tool.outputGuardrails ?? []), afterCall]
  }
}
