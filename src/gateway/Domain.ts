/** Provider connections and gateway routes: the schemas of their contract. */
import { Schema } from "effect"
import {
  Identifier,
  Limits,
  nonEmptyBounded,
  NonEmptyIdentifier,
  NonEmptyName,
  Timestamp,
  Url
} from "../platform/Schemas.js"

export const ProviderConnectionId = Identifier.pipe(Schema.brand("ProviderConnectionId")).annotations({
  identifier: "ProviderConnectionId"
})
export type ProviderConnectionId = typeof ProviderConnectionId.Type
export const GatewayRouteId = Identifier.pipe(Schema.brand("GatewayRouteId")).annotations({
  identifier: "GatewayRouteId"
})
export type GatewayRouteId = typeof GatewayRouteId.Type

/** The provider key is write-only: decoded as Redacted so it never reaches logs, and never returned. */
const ProviderApiKey = Schema.Redacted(
  // It goes upstream in a header: a line break (a key pasted from a file), a space or a non-ASCII character
  // cannot, and would fail every call through the route.
  nonEmptyBounded(Limits.text).pipe(
    Schema.pattern(/^[\x21-\x7e]+$/, {
      message: () => "expected the key as issued: printable ASCII, without spaces or line breaks"
    })
  )
).annotations({
  description: "Provider API key (write-only): printable ASCII, without spaces or line breaks"
})

/**
 * The provider family: it picks the default `base_url` (OpenAI's or
 * Anthropic's API). Either dialect can be sent through any connection.
 */
export const ProviderKind = Schema.Literal("chat_compatible", "messages_compatible").annotations({
  description:
    "chat_compatible (OpenAI-style, default base https://api.openai.com/v1) or messages_compatible (Anthropic-style, default base https://api.anthropic.com)"
})
export type ProviderKind = typeof ProviderKind.Type

/** `configured`: a key is stored and this service can decrypt it; `unreadable`: it cannot (key rotated), re-enter it. */
export const CredentialStatus = Schema.Literal("configured", "unreadable")

/** An absolute http(s) URL; https anywhere, plain http only to HTTP_URL_ALLOWLIST hosts (checked by the service). */
const BaseUrl = Url.annotations({
  description: "Upstream API base URL: https, or http to hosts on HTTP_URL_ALLOWLIST"
})

export class ProviderConnection extends Schema.Class<ProviderConnection>("ProviderConnection")({
  id: ProviderConnectionId,
  display_name: Schema.String,
  kind: ProviderKind,
  base_url: Schema.String,
  default_model: Schema.NullOr(Schema.String),
  credential_status: CredentialStatus,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const CreateProviderConnection = Schema.Struct({
  display_name: NonEmptyName,
  kind: ProviderKind,
  provider_api_key: ProviderApiKey,
  base_url: Schema.optional(BaseUrl),
  default_model: Schema.optional(Schema.NullOr(NonEmptyIdentifier))
})

/** `base_url: null` resets it to the kind's default. */
export const UpdateProviderConnection = Schema.Struct({
  display_name: Schema.optional(NonEmptyName),
  provider_api_key: Schema.optional(ProviderApiKey),
  base_url: Schema.optional(Schema.NullOr(BaseUrl)),
  default_model: Schema.optional(Schema.NullOr(NonEmptyIdentifier))
})

/** A route's guardrail mode for one direction: `off` decides nothing, `observe` records only, `enforce` acts. */
export const GuardrailMode = Schema.Literal("off", "observe", "enforce")
export type GuardrailMode = typeof GuardrailMode.Type

/** What the gateway decides on a route: the request (`input`), the reply (`output`), proposed tool calls. */
export const RouteGuardrails = Schema.Struct({
  input: GuardrailMode,
  output: GuardrailMode,
  tool_calls: GuardrailMode
}).annotations({ identifier: "RouteGuardrails" })
export type RouteGuardrails = typeof RouteGuardrails.Type

/** On create every direction defaults to `enforce`; on PATCH only the directions given change. */
export const RouteGuardrailsInput = Schema.Struct({
  input: Schema.optional(GuardrailMode),
  output: Schema.optional(GuardrailMode),
  tool_calls: Schema.optional(GuardrailMode)
})
export type RouteGuardrailsInput = typeof RouteGuardrailsInput.Type

export class GatewayRoute extends Schema.Class<GatewayRoute>("GatewayRoute")({
  id: GatewayRouteId,
  agent_id: Schema.String,
  display_name: Schema.String,
  provider_connection_id: Schema.String,
  guardrails: RouteGuardrails,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const CreateGatewayRoute = Schema.Struct({
  agent_id: NonEmptyIdentifier,
  display_name: NonEmptyName,
  provider_connection_id: NonEmptyIdentifier,
  guardrails: Schema.optional(RouteGuardrailsInput)
})

export const UpdateGatewayRoute = Schema.Struct({
  agent_id: Schema.optional(NonEmptyIdentifier),
  display_name: Schema.optional(NonEmptyName),
  provider_connection_id: Schema.optional(NonEmptyIdentifier),
  guardrails: Schema.optional(RouteGuardrailsInput)
})

/** A provider request or response, passed through unchanged. */
export const ProviderMessage = Schema.Unknown.annotations({
  description: "Provider-dialect JSON, passed through unchanged"
})
