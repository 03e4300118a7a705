/** The authorization contract: a proposed event in, a decision out. */
import { Authentication } from "../identity/Authentication.js"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { AuthorizationResponse, ProposedEvent } from "./Domain.js"

// 200, not 201: the answer is a decision; the trace it writes is a side record.
export class EventsApi extends HttpApiGroup.make("events")
  .add(HttpApiEndpoint.post("authorizeEvent", "/events").setPayload(ProposedEvent).addSuccess(AuthorizationResponse))
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Authorization: submit a proposed event, get an effect, findings, a receipt id and a trace id. A failed tool-metadata lookup answers effect defer, not an error."
  ) {}
