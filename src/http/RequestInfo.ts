/**
 * What the request plumbing knows of the request being answered: its id (the
 * caller's `x-request-id`, or a new one), its route in the contract and when
 * it arrived. The request pipeline provides it to everything downstream (the
 * credential middleware reads the route, hot endpoints the id), so no one
 * looks the route up again or reads the id back from log annotations.
 */
import { Context, Effect, Option } from "effect"
import { uuidv7 } from "../platform/Ids.js"
import type { ReportTurn } from "./ReportPermits.js"
import type { RouteEntry } from "./Routes.js"

export interface RequestInfo {
  readonly requestId: string
  readonly route: RouteEntry | undefined
  /** `performance.now()` when the request arrived. */
  readonly startedAt: number
  /** A report's permits (ReportPermits.ts), admitted by the credential middleware; absent on other routes. */
  readonly reportTurn?: ReportTurn | undefined
}

export class CurrentRequest extends Context.Tag("http/CurrentRequest")<CurrentRequest, RequestInfo>() {}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The caller's `x-request-id` when it is a sane token, else a fresh one. */
export const requestIdOf = (incoming: string | ReadonlyArray<string> | undefined) =>
  typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : `req_${uuidv7().replaceAll("-", "")}`

/** The request being answered; outside the pipeline (never in the service), a fresh id and no route. */
export const currentRequest: Effect.Effect<RequestInfo> = Effect.map(
  Effect.serviceOption(CurrentRequest),
  Option.getOrElse(() => ({ requestId: requestIdOf(undefined), route: undefined, startedAt: performance.now() }))
)
