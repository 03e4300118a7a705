/**
 * What a red-team attack record keeps under the workspace's
 * `data_handling_mode`, applied before the record is written (every read:
 * sessions, attack records, reports, shared reports, hardening, serves what
 * was kept). The verdict is made on the raw reply before this runs.
 * - `raw_allowed`: as produced;
 * - `redacted`: prompt, reply, goal, evidence and session events with PII,
 *   secrets and canary tokens (`[CANARY]`) replaced by typed placeholders;
 * - `metadata_only`: those texts as a SHA-256 digest and length only.
 * In both stricter modes the substrates keep their kind, key, tool and path
 * but not their values; hardening re-derives the values from a fresh replay.
 */
import { type DataHandlingMode, keepAttackText, keepJson } from "../privacy/Redaction.js"
import { CANARY } from "./Judge.js"
import type { NewAttack } from "./Repo.js"

/** Canary tokens are secrets of the agent's system prompt, which the generic detectors do not know. */
const withoutCanaries = (mode: DataHandlingMode, text: string) =>
  mode === "redacted" ? text.replace(CANARY, "[CANARY]") : text

export const keepText = (mode: DataHandlingMode, text: string) => keepAttackText(mode, withoutCanaries(mode, text))

const canariesDeep = (value: unknown): unknown => {
  if (typeof value === "string") return value.replace(CANARY, "[CANARY]")
  if (Array.isArray(value)) return value.map(canariesDeep)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, canariesDeep(inner)]))
  }
  return value
}

const keepValue = (mode: DataHandlingMode, value: unknown) =>
  keepJson(mode, mode === "redacted" ? canariesDeep(value) : value)

/** An event payload: tool-call arguments are content; effects, tool names and verdicts are not. */
const keepPayload = (mode: DataHandlingMode, payload: unknown): unknown => {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return payload
  const fields = payload as Record<string, unknown>
  return {
    ...fields,
    ...("arguments" in fields ? { arguments: keepValue(mode, fields["arguments"]) } : {}),
    ...(Array.isArray(fields["tool_calls"])
      ? {
          tool_calls: (fields["tool_calls"] as ReadonlyArray<{ name?: unknown; arguments?: unknown }>).map((call) => ({
            name: call.name,
            arguments: keepValue(mode, call.arguments)
          }))
        }
      : {})
  }
}

const keepEvent = (mode: DataHandlingMode, event: unknown): unknown => {
  if (typeof event !== "object" || event === null) return event
  const fields = event as Record<string, unknown>
  return {
    ...fields,
    content_text: typeof fields["content_text"] === "string" ? keepText(mode, fields["content_text"]) : fields["content_text"],
    payload: keepPayload(mode, fields["payload"])
  }
}

const withoutValues = (substrate: unknown): unknown =>
  typeof substrate === "object" && substrate !== null ? { ...substrate, values: [] } : substrate

export const keepAttack = (mode: DataHandlingMode, row: NewAttack): NewAttack => {
  if (mode === "raw_allowed") return row
  return {
    ...row,
    goal: keepText(mode, row.goal),
    prompt: keepText(mode, row.prompt),
    reply: row.reply === null ? null : keepText(mode, row.reply),
    evidence: keepText(mode, row.evidence),
    substrates: Array.isArray(row.substrates) ? row.substrates.map(withoutValues) : [],
    events: Array.isArray(row.events) ? row.events.map((event) => keepEvent(mode, event)) : row.events
  }
}
