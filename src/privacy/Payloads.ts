/**
 * The content-bearing parts of stored records, kept under the workspace's
 * data handling mode; identifiers, effects and policy references stay as
 * they are (they are the service's own values, not customer content).
 */
import { type DataHandlingMode, keepJson } from "./Redaction.js"

interface DecisionAnswerShape {
  readonly findings: ReadonlyArray<{ readonly evidence: unknown }>
  readonly transformed_value: unknown
}

interface TracePayloadShape {
  readonly request: {
    readonly action: {
      readonly operation: string
      readonly content?: string | undefined
      readonly params?: unknown
      readonly sources?: unknown
    }
    readonly metadata: unknown
  }
  readonly response: DecisionAnswerShape
}

/** A decision's answer as it may be stored (trace, idempotent repeat): finding evidence and the rewritten value. */
export const keepDecisionAnswer = <A extends DecisionAnswerShape>(mode: DataHandlingMode, answer: A): A =>
  mode === "raw_allowed"
    ? answer
    : {
        ...answer,
        findings: answer.findings.map((finding) => ({ ...finding, evidence: keepJson(mode, finding.evidence) })),
        transformed_value: keepJson(mode, answer.transformed_value)
      }

/** A decision trace's payload: content, params, metadata, finding evidence and the rewritten value. */
export const keepTracePayload = <P extends TracePayloadShape>(mode: DataHandlingMode, payload: P): P => {
  if (mode === "raw_allowed") return payload
  const { action } = payload.request
  return {
    ...payload,
    request: {
      ...payload.request,
      action: {
        ...action,
        ...(action.content === undefined ? {} : { content: keepJson(mode, action.content) }),
        ...(action.params === undefined ? {} : { params: keepJson(mode, action.params) })
      },
      metadata: keepJson(mode, payload.request.metadata)
    },
    response: keepDecisionAnswer(mode, payload.response)
  }
}
