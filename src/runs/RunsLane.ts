/**
 * `POST /v1/runs/{id}/events` in the fast lane (src/platform/FastLane.ts):
 * agents append run events at a high rate. Same authenticator, path and
 * payload schemas and `Runs.append` as the router's handler, so every status
 * and body is unchanged.
 */
import { Effect, Schema } from "effect"
import { makeDirectAuthenticator, makeLaneAuthenticator } from "../identity/AuthenticationLive.js"
import type { FastHandler } from "../http/Lane.js"
import { RunPath } from "./Api.js"
import { CreateRunEvent, RunEvent } from "./Domain.js"
import { Runs } from "./Runs.js"

const decodePath = Schema.decodeUnknown(RunPath)
const decodeEvent = Schema.decodeUnknown(CreateRunEvent)
const encodeEvent = Schema.encode(RunEvent)

/** The lane's entries for this domain, by `group.endpoint`. */
export const runsLane = Effect.gen(function* () {
  const runs = yield* Runs
  const authenticate = yield* makeLaneAuthenticator
  const appendRunEvent: FastHandler = (request) =>
    Effect.gen(function* () {
      const caller = yield* authenticate(request)
      const { id } = yield* decodePath(request.params)
      const event = yield* runs.append(caller.workspaceId, id, yield* decodeEvent(request.body))
      return { status: 201, body: yield* encodeEvent(event) }
    })
  // Warm appends take the direct path; the rest (and every error answered before the writer) the Effect handler.
  const direct = runs.direct(yield* makeDirectAuthenticator)
  return [["runs.appendRunEvent", Object.assign(appendRunEvent, { direct })]] as const
})
