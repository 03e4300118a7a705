/**
 * The direct path of `POST /v1/runs/{id}/events` (a fast-lane
 * `DirectHandler`): a cached runtime key's well-formed append goes to the
 * group-committing writer without a fiber, and is answered when its batch is
 * decided (201 with the stored event, or the writer's 404/409). Anything
 * else is left to the Effect path, which answers it the same way.
 */
import { Cause, Effect, Either, Exit, Option, Runtime, Schema } from "effect"
import type { DirectAuthenticator } from "../identity/AuthenticationLive.js"
import { clientFaultOf } from "../platform/Sql.js"
import { type DirectHandler, writeHttpError, writeInternalError, writeJson } from "../http/Lane.js"
import { RunPath } from "./Api.js"
import { CreateRunEvent, RunEvent } from "./Domain.js"
import type { RunEventWriter } from "./RunEventWriter.js"
import { newRunEvent, toRunEvent } from "./RunEvents.js"

const decodePath = Schema.decodeUnknownOption(RunPath)
const decodeEvent = Schema.decodeUnknownEither(CreateRunEvent)
const encodeEvent = Schema.encodeEither(RunEvent)

/** Builds the handler over the Runs service's writer; the HTTP side brings its authenticator. */
export const makeDirectAppends = (writer: RunEventWriter) =>
  Effect.map(Effect.runtime<never>(), (runtime) => {
    const runFork = Runtime.runFork(runtime)
    return (authenticate: DirectAuthenticator): DirectHandler =>
      (request, response, answered) => {
        // Everything before the hand-over only looks: a miss leaves the request, untouched, to the Effect path.
        const caller = authenticate(request)
        const path = decodePath(request.params)
        const input = decodeEvent(request.body)
        if (caller === undefined || Option.isNone(path) || Either.isLeft(input)) return false
        const event = newRunEvent(caller.workspaceId, path.value.id, input.right)
        if (Either.isLeft(event)) return false
        writer.enqueue(event.right, (outcome) => {
          if (response.destroyed) return // the client left; the event stands appended
          if (Exit.isSuccess(outcome)) {
            const encoded = encodeEvent(toRunEvent(outcome.value))
            if (Either.isRight(encoded)) {
              writeJson(response, { status: 201, body: encoded.right }, request.requestId)
              return answered(201)
            }
          } else {
            const refused = Cause.failureOption(outcome.cause)
            if (Option.isSome(refused)) return answered(writeHttpError(response, refused.value, request.requestId))
            const clientFault = clientFaultOf(Cause.squash(outcome.cause))
            if (clientFault !== undefined) return answered(writeHttpError(response, clientFault, request.requestId))
          }
          runFork(Effect.logError("run event append failed", Exit.isFailure(outcome) ? outcome.cause : outcome.value))
          answered(writeInternalError(response, request.requestId))
        })
        return true
      }
  })
