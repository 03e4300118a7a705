/**
 * Shared by the `POST /v1/events` suites
 * (events-profiles-policies-http.test.ts,
 * events-identity-principal-http.test.ts): the agents and the tenant they
 * start from.
 */
import { Effect } from "effect"
import { tenant } from "../support/Tenants.js"
import { createAgent } from "../support/Events.js"

export const AGENT = "support-bot"
export const OTHER_AGENT = "other-bot"

/** A tenant with the support agent's profile and a second, bare agent. */
export const setUp = (base: string) =>
  Effect.gen(function* () {
    const owner = yield* tenant(base)
    yield* createAgent(base, owner, AGENT)
    yield* createAgent(
      base,
      owner,
      OTHER_AGENT,
      `agent_id: ${OTHER_AGENT}\ndisplay_name: Other\nauthority: {}\nscope: {}\ntone:\n  target: neutral\n`
    )
    return owner
  })
