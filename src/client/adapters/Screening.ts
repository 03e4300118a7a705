/**
 * What both adapters share: options, the decision on one piece of an agent's
 * traffic (text in, a proposed reply or tool call, a tool's result), and
 * whether it blocks. The frameworks differ only in where they hook in.
 */
import type { CallOptions, Decision, DecideInput, GuardrailClientFacade } from "../Facade.js"

export type Effect = Decision["effect"]

export interface GuardrailAdapterOptions {
  /** The client (`createGuardrailClient`) that decides; its defaults name the principal. */
  readonly client: GuardrailClientFacade
  /** `principal.agent_id`, when the client names none or another. */
  readonly agentId?: string
  /** The run (`createRun`) the decisions belong to; a function is read at each decision. */
  readonly runId?: string | (() => string | undefined)
  /** The session the decisions belong to. */
  readonly sessionId?: string
  /** Effects that block (trip the guardrail); default `deny` and `defer` (an action awaiting approval waits). */
  readonly blockOn?: ReadonlyArray<Effect>
  /**
   * Before a tool runs, fetch the receipt of the decision that permitted it and verify it against the
   * service's keys (`verifyReceipt`); a receipt that is missing, forged or not a permit blocks the call.
   */
  readonly requirePermitReceipt?: boolean
}

export type ScreenedKind = DecideInput["kind"]

/** A decision that blocked: the adapters throw it (or hand it to the framework's tripwire). */
export class GuardrailDenied extends Error {
  override readonly name = "GuardrailDenied"
  constructor(
    readonly decision: Decision,
    what: string
  ) {
    super(`The guardrail ${decision.effect === "defer" ? "deferred" : "denied"} ${what}: ${decision.reason}`)
  }
  get findings() {
    return this.decision.findings
  }
}

/** The decision on one piece of traffic. */
export const screen = (
  options: GuardrailAdapterOptions,
  kind: ScreenedKind,
  action: DecideInput["action"],
  callOptions?: CallOptions
): Promise<Decision> => {
  const runId = typeof options.runId === "function" ? options.runId() : options.runId
  return options.client.decide(
    {
      kind,
      action,
      ...(options.agentId === undefined ? {} : { principal: { agent_id: options.agentId } }),
      ...(runId === undefined ? {} : { run_id: runId }),
      ...(options.sessionId === undefined ? {} : { session_id: options.sessionId })
    },
    callOptions
  )
}

export const blocks = (options: GuardrailAdapterOptions, decision: Decision) =>
  (options.blockOn ?? ["deny", "defer"]).includes(decision.effect)

/** The text a `rewrite` decision replaces content with (its transformed value, as text). */
export const rewrittenText = (decision: Decision): string | undefined =>
  decision.effect !== "rewrite" || decision.transformed_value === null || decision.transformed_value === undefined
    ? undefined
    : typeof decision.transformed_value === "string"
      ? decision.transformed_value
      : JSON.stringify(decision.transformed_value)

/** What a framework's guardrail reports alongside its verdict. */
export const summaryOf = (decision: Decision) => ({
  effect: decision.effect,
  reason: decision.reason,
  trace_id: decision.trace_id,
  receipt_id: decision.receipt_id,
  findings: decision.findings
})

/**
 * Decides a proposed tool call; answers the decision when the call may run, else throws
 * `GuardrailDenied` (blocked, or no valid permit receipt when one is required).
 */
export const authorizeToolCall = async (
  options: GuardrailAdapterOptions,
  toolName: string,
  params: Record<string, unknown>
): Promise<Decision> => {
  const decision = await screen(options, "output.proposed", { operation: toolName, params })
  if (blocks(options, decision)) throw new GuardrailDenied(decision, `the tool call ${toolName}`)
  if (options.requirePermitReceipt === true) {
    const claims = await options.client.verifiedReceipt(decision.receipt_id).catch(() => undefined)
    if (claims === undefined || claims.effect !== "permit" || claims.trace_id !== decision.trace_id) {
      throw new GuardrailDenied(
        { ...decision, reason: "No valid permit receipt for this tool call." },
        `the tool call ${toolName}`
      )
    }
  }
  return decision
}

/** Tool arguments as the service's `params` (an object; anything else is wrapped as `{ input }`). */
export const paramsOf = (args: unknown): Record<string, unknown> => {
  let value = args
  if (typeof args === "string") {
    try {
      value = JSON.parse(args === "" ? "{}" : args)
    } catch {
      value = args
    }
  }
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : { input: value }
}

/** A tool's output as text to screen. */
export const textOf = (value: unknown): string => (typeof value === "string" ? value : (JSON.stringify(value) ?? ""))
