/**
 * The content-bearing parts of stored records, kept under the workspace's
 * data handling mode; identifiers, effects and policy references stay as
 * they are (they are the service's own values, not customer content).
 */
import { type DataHandlingMode, keepJson } from "./Redaction.js"

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
  readonly response: {
    readonly findings: ReadonlyArray<{ readonly evidence: unknown }>
    readonly transformed_value: unknown
  }
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
    response: {
      ...payload.response,
      findings: payload.response.findings.map((finding) => ({ ...finding, evidence: keepJson(mode, finding.evidence) })),
      transformed_value: keepJson(mode, payload.response.transformed_value)
    }
  }
}
