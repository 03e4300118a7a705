/**
 * Hot endpoints: the few endpoints agents call at a high rate (decisions,
 * run-event appends, the gateway's proxy routes). Each is declared once, as
 * a `HotEndpoint`: the contract endpoint it answers, its use case (warm
 * steps and what to do once they are ready, src/platform/Warm.ts), whether
 * its body is passed through as sent, and whether the fast lane may run it
 * directly from warm state. The router's handler (`routerHandler`, given to
 * `HttpApiBuilder.group`) and the fast lane's handler (Lane.ts) are both
 * built from that one declaration and from the contract's schemas.
 */
import type * as Headers from "@effect/platform/Headers"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect } from "effect"
import type { Caller } from "../identity/Authentication.js"
import { CurrentCaller } from "../identity/Authentication.js"
import type { HotUseCase } from "../platform/Warm.js"
import type { HttpError } from "./Errors.js"
import { currentRequest } from "./RequestInfo.js"

/** A request as a hot endpoint's use case sees it, whichever way it came in. */
export interface HotRequest<Path, Payload> {
  readonly caller: Caller
  readonly path: Path
  readonly payload: Payload
  readonly headers: Headers.Headers
  readonly requestId: string
  /** `performance.now()` when the request arrived. */
  readonly startedAt: number
}

/** The body of a pass-through endpoint: as sent, and parsed. */
export interface RawBody {
  readonly text: string
  readonly json: unknown
}

export interface HotEndpoint<Path, Payload, A> {
  /** The contract endpoint, by group and name (src/*\/Api.ts). */
  readonly group: string
  readonly endpoint: string
  /** The body reaches the use case as sent (`RawBody`), not decoded by the contract's payload schema. */
  readonly raw: boolean
  /** The fast lane may answer from warm state alone, without a fiber, when every step finds what it needs. */
  readonly direct: boolean
  readonly useCase: HotUseCase<HotRequest<Path, Payload>, A, HttpError>
}

/** Any hot endpoint, as the lane holds them (it decodes each request with that endpoint's own contract schemas). */
export type AnyHotEndpoint = HotEndpoint<never, never, unknown>

/** The router's handler of a hot endpoint whose body the contract decodes. */
export const routerHandler =
  <Path, Payload, A>(hot: HotEndpoint<Path, Payload, A>) =>
  (request: {
    // Absent for an endpoint without path parameters (then `Path` is `never`).
    readonly path?: Path
    readonly payload: Payload
    readonly request: HttpServerRequest.HttpServerRequest
  }) =>
    Effect.gen(function* () {
      const caller = yield* CurrentCaller
      const { requestId, startedAt } = yield* currentRequest
      return yield* hot.useCase.run({
        caller,
        path: request.path!,
        payload: request.payload,
        headers: request.request.headers,
        requestId,
        startedAt
      })
    })

/** The router's handler of a pass-through hot endpoint (the request pipeline has read and parsed its JSON body). */
export const rawRouterHandler =
  <Path, A>(hot: HotEndpoint<Path, RawBody, A>) =>
  (request: { readonly path: Path; readonly request: HttpServerRequest.HttpServerRequest }) =>
    Effect.gen(function* () {
      const caller = yield* CurrentCaller
      const { requestId, startedAt } = yield* currentRequest
      const text = yield* Effect.orElseSucceed(request.request.text, () => "")
      const json = yield* Effect.orElseSucceed(request.request.json, () => null)
      return yield* hot.useCase.run({
        caller,
        path: request.path,
        payload: { text, json },
        headers: request.request.headers,
        requestId,
        startedAt
      })
    })
