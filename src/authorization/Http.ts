/** Stub handler of the events group; answers 501 until implemented. */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GuardrailApi } from "../Api.js"
import { notImplemented } from "../platform/Errors.js"

export const EventsHttpLive = HttpApiBuilder.group(GuardrailApi, "events", (handlers) =>
  handlers.handle("authorizeEvent", () => Effect.fail(notImplemented("POST /v1/events")))
)
