/**
 * Shared by the API keys suites (api-keys-create-list-http.test.ts,
 * api-keys-credentials-revoke-http.test.ts).
 */
import { Effect } from "effect"
import { type GuardrailClient, withRaw } from "../support/Api.js"

/** The workspace's keys as decoded, and the answer as sent (to show no plaintext is in it). */
export const listKeys = (owner: { readonly api: GuardrailClient }) =>
  Effect.map(withRaw(owner.api.apiKeys.listApiKeys({ withResponse: true })), ({ body, text, value }) => ({
    keys: value.api_keys,
    text,
    body
  }))
