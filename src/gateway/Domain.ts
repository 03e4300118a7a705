/** Provider connections and gateway routes: the schemas of their contract. */
import { Schema } from "effect"
import { Timestamp } from "../platform/Schemas.js"

export const ProviderConnectionId = Schema.String.pipe(Schema.brand("ProviderConnectionId")).annotations({
  identifier: "ProviderConnectionId"
})
export type ProviderConnectionId = typeof ProviderConnectionId.Type
export const GatewayRouteId = Schema.String.pipe(Schema.brand("GatewayRouteId")).annotations({
  identifier: "GatewayRouteId"
})
export type GatewayRouteId = typeof GatewayRouteId.Type

/** The provider key is write-only: decoded as Redacted so it never reaches logs, and never returned. */
const ProviderApiKey = Schema.Redacted(Schema.NonEmptyString).annotations({
  description: "Provider API key (write-only)"
})

export class ProviderConnection extends Schema.Class<ProviderConnection>("ProviderConnection")({
  id: ProviderConnectionId,
  display_name: Schema.String,
  kind: Schema.String.annotations({ description: "Provider dialect, e.g. chat_compatible" }),
  base_url: Schema.NullOr(Schema.String),
  default_model: Schema.NullOr(Schema.String),
  credential_status: Schema.String.annotations({ description: "e.g. configured" }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const CreateProviderConnection = Schema.Struct({
  display_name: Schema.NonEmptyString,
  kind: Schema.NonEmptyString,
  provider_api_key: ProviderApiKey,
  base_url: Schema.optional(Schema.String),
  default_model: Schema.optional(Schema.String)
})

export const UpdateProviderConnection = Schema.Struct({
  display_name: Schema.optional(Schema.NonEmptyString),
  provider_api_key: Schema.optional(ProviderApiKey),
  base_url: Schema.optional(Schema.NullOr(Schema.String)),
  default_model: Schema.optional(Schema.NullOr(Schema.String))
})

export class GatewayRoute extends Schema.Class<GatewayRoute>("GatewayRoute")({
  id: GatewayRouteId,
  agent_id: Schema.String,
  display_name: Schema.String,
  provider_connection_id: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const CreateGatewayRoute = Schema.Struct({
  agent_id: Schema.NonEmptyString,
  display_name: Schema.NonEmptyString,
  provider_connection_id: Schema.NonEmptyString
})

export const UpdateGatewayRoute = Schema.Struct({
  agent_id: Schema.optional(Schema.NonEmptyString),
  display_name: Schema.optional(Schema.NonEmptyString),
  provider_connection_id: Schema.optional(Schema.NonEmptyString)
})

/** A provider request or response, passed through unchanged. */
export const ProviderMessage = Schema.Unknown.annotations({
  description: "Provider-dialect JSON, passed through unchanged"
})
