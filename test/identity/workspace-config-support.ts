/**
 * Shared by the workspace configuration suites
 * (workspace-environments-http.test.ts, workspace-checker-modes-http.test.ts,
 * workspace-settings-http.test.ts).
 */
import { Effect } from "effect"
import type { GuardrailClient } from "../support/Api.js"

export const MODES = [
  "approval_checker_mode",
  "flow_checker_mode",
  "memory_checker_mode",
  "param_checker_mode"
] as const

export interface Owner {
  readonly api: GuardrailClient
}

export const getSettings = (owner: Owner) => owner.api.settings.getSettings({})

export const tick = Effect.sleep("5 millis")
