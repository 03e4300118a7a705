/** The authorization contract: a proposed event in, a decision out; plus receipts, their keys and approval grants. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Authentication } from "../identity/Authentication.js"
import { CursorParam, Identifier, LimitParam, Note, Timestamp } from "../platform/Schemas.js"
import { MaxBodyBytes } from "../http/Routes.js"
import { AuthorizationResponse, ProposedEvent } from "./Domain.js"
import { EvaluateEvent, EvaluateResponse } from "./DryRun.js"

// 200, not 201: the answer is a decision; the trace it writes is a side record.
export class EventsApi extends HttpApiGroup.make("events")
  .add(HttpApiEndpoint.post("authorizeEvent", "/events").setPayload(ProposedEvent).addSuccess(AuthorizationResponse))
  .add(
    HttpApiEndpoint.post("evaluateEvent", "/events/evaluate")
      .setPayload(EvaluateEvent)
      .addSuccess(EvaluateResponse)
      // 50 candidate documents of 64 KiB each, with the event.
      .annotate(MaxBodyBytes, 4 * 1024 * 1024)
      .annotate(
        OpenApi.Description,
        "Extension: a dry run. Decides like POST /v1/events, optionally with candidate policies (evaluated as enabled, replacing a live policy with the same id) and live policies disabled, and writes nothing: no trace, receipt, event or counter. trace_id and receipt_id name records that do not exist."
      )
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Authorization: submit a proposed event, get an effect, findings, a receipt id and a trace id. A failed tool-metadata lookup answers effect defer, not an error."
  ) {}

export const Receipt = Schema.Struct({
  receipt_id: Schema.String,
  trace_id: Schema.String,
  jws: Schema.String.annotations({ description: "Compact JWS (EdDSA) over the decision's canonical JSON" }),
  created_at: Schema.String,
  policy_set_digest: Schema.NullOr(Schema.String).annotations({
    description:
      "Extension: the digest of the policy set that decided (also a signed claim of the JWS); GET /v1/policy-sets/{digest} returns it. Null for receipts issued before digests, or when the registry could not be read."
  })
}).annotations({ identifier: "Receipt" })

export const Jwks = Schema.Struct({
  keys: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}).annotations({ identifier: "Jwks" })

export const ApprovalGrant = Schema.Struct({
  intent_id: Schema.String,
  granted_by: Schema.String,
  expires_at: Schema.String,
  created_at: Schema.String
}).annotations({ identifier: "ApprovalGrant" })

export const Approval = Schema.Struct({
  intent_id: Schema.String,
  status: Schema.Literal("pending", "granted", "denied"),
  trace_id: Schema.String.annotations({ description: "The latest decision that asked for this approval" }),
  agent_id: Schema.String,
  environment_id: Schema.String,
  tool: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String),
  approvers: Schema.Array(Schema.String),
  requested_at: Timestamp.annotations({ description: "When the intent first asked for approval" }),
  granted_by: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Timestamp).annotations({ description: "The grant's lease end, while granted" }),
  denied_by: Schema.NullOr(Schema.String),
  deny_reason: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Approval" })

const IntentPath = Schema.Struct({ intent_id: Identifier })

export class ApprovalsApi extends HttpApiGroup.make("approvals")
  .add(
    HttpApiEndpoint.get("listApprovals", "/approvals")
      .setUrlParams(
        Schema.Struct({
          status: Schema.optional(Schema.Literal("pending", "granted", "denied")).annotations({
            description: "Default pending"
          }),
          limit: Schema.optional(LimitParam()),
          cursor: Schema.optional(CursorParam)
        })
      )
      .addSuccess(Schema.Struct({ approvals: Schema.Array(Approval), next_cursor: Schema.optional(Schema.String) }))
  )
  .add(
    HttpApiEndpoint.post("denyApproval", "/approvals/:intent_id/deny")
      .setPath(IntentPath)
      .setPayload(Schema.Struct({ reason: Schema.optional(Note) }))
      .addSuccess(Approval, { status: 201 })
  )
  .prefix("/v1")
  .middleware(Authentication)
  .annotate(
    OpenApi.Description,
    "Extension: the approvals queue. Intents deferred awaiting approval (pending, oldest first), granted (newest first, while the lease lasts) or denied (newest first). A denied intent stays denied: it then answers deny. When the approval names approvers, only they may grant or deny (403 not_an_approver)."
  ) {}

export class ReceiptsApi extends HttpApiGroup.make("receipts")
  .add(
    HttpApiEndpoint.get("getReceipt", "/v1/receipts/:id")
      .setPath(Schema.Struct({ id: Identifier }))
      .addSuccess(Receipt)
  )
  .add(
    HttpApiEndpoint.post("grantApproval", "/v1/approvals/:intent_id/grant")
      .setPath(IntentPath)
      .setPayload(
        Schema.Struct({
          note: Schema.optional(Note),
          ttl_seconds: Schema.optional(Schema.Int.pipe(Schema.between(1, 7 * 24 * 3600)))
        })
      )
      .addSuccess(ApprovalGrant, { status: 201 })
  )
  .middlewareEndpoints(Authentication)
  .add(HttpApiEndpoint.get("jwks", "/.well-known/jwks.json").addSuccess(Jwks))
  .annotate(
    OpenApi.Description,
    "Extensions: a decision's signed receipt, the public keys that verify receipts offline (no credential), and human approval grants for deferred intents."
  ) {}
