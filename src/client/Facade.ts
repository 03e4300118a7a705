/**
 * The Promise facade of the typed client, for code that does not use Effect:
 * `createGuardrailClient({ baseUrl, apiKey })` with one method per common
 * call of an agent (decide, runs and their events, traces, reviews,
 * receipts). Inputs are the contract's request shapes (checked by its
 * schemas before sending); every failure rejects with a `GuardrailError`.
 * Decisions and run-event appends carry an `Idempotency-Key`, so the
 * retries of 429 and 503 answers never write twice.
 */
import { Cause, Effect, Exit, Option, ParseResult, Schema } from "effect"
import type { AuthorizationResponse } from "../authorization/Domain.js"
import { ProposedEvent } from "../authorization/Domain.js"
import { isHttpError, statusOf } from "../http/Errors.js"
import {
  CreateReviewEvent,
  CreateRun,
  CreateRunEvent,
  type ReviewEvent,
  type Run,
  type RunDetail,
  type RunEvent,
  RunId,
  type Trace,
  TraceId,
  UpdateRun
} from "../runs/Domain.js"
import { type GuardrailClient, guardrailClient, type RetryOptions, withIdempotencyKey } from "./Client.js"
import { type Jwks, type ReceiptClaims, verifyReceipt } from "./Receipts.js"

/** Why a call failed: `http` (the service answered an error), `network`, `invalid_request` or `invalid_response`. */
export type GuardrailErrorKind = "http" | "network" | "invalid_request" | "invalid_response"

/** A failed call: the service's error answer (`status`, `code`, `details`), or why none came. */
export class GuardrailError extends Error {
  override readonly name = "GuardrailError"
  constructor(
    readonly kind: GuardrailErrorKind,
    /** The HTTP status; 0 when no answer came. */
    readonly status: number,
    /** The service's error code (e.g. `validation_failed`), or the kind when no answer came. */
    readonly code: string,
    message: string,
    readonly details: ReadonlyArray<{ readonly path: string; readonly message: string }> = []
  ) {
    super(message)
  }
}

/** The one mapping of a failed call to a `GuardrailError`. */
export const toGuardrailError = (cause: Cause.Cause<unknown>): GuardrailError => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return new GuardrailError("network", 0, "network", Cause.pretty(cause))
  const error = failure.value
  if (error instanceof GuardrailError) return error
  if (isHttpError(error)) return new GuardrailError("http", statusOf(error), error.code, error.message, error.details)
  if (ParseResult.isParseError(error)) {
    const details = ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => ({
      path: issue.path.map(String).join("."),
      message: issue.message
    }))
    return new GuardrailError("invalid_request", 0, "invalid_request", error.message, details)
  }
  const tag = typeof error === "object" && error !== null && "_tag" in error ? error._tag : undefined
  const message = error instanceof Error ? error.message : String(error)
  return tag === "ResponseError"
    ? new GuardrailError("invalid_response", 0, "invalid_response", message)
    : new GuardrailError("network", 0, "network", message)
}

/** A proposed event; `principal` fields not given are the client's defaults (or the runtime key's). */
export type DecideInput = Omit<typeof ProposedEvent.Encoded, "principal"> & {
  readonly principal?: Partial<(typeof ProposedEvent.Encoded)["principal"]>
}

export interface CallOptions {
  /** The request's `Idempotency-Key` (default: a fresh one, kept across the client's own retries). */
  readonly idempotencyKey?: string
  /** Cancels the call. */
  readonly signal?: AbortSignal
}

export interface GuardrailClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string
  /** A runtime API key (or a session JWT). */
  readonly apiKey: string
  /** `principal.agent_id` of decisions that name none. */
  readonly agentId?: string
  /** `principal.workspace_id` of decisions that name none (a runtime key's own workspace). */
  readonly workspaceId?: string
  /** `principal.environment_id` of decisions that name none (a runtime key's own environment). */
  readonly environmentId?: string
  /** Retries of 429 and 503 answers; `false`: none. */
  readonly retry?: RetryOptions | false
}

export type Decision = AuthorizationResponse

export interface GuardrailClientFacade {
  /** `POST /v1/events`: the decision on a proposed event (input, tool call, tool result or reply). */
  readonly decide: (event: DecideInput, options?: CallOptions) => Promise<Decision>
  /** `POST /v1/runs`. */
  readonly createRun: (run: typeof CreateRun.Encoded, options?: CallOptions) => Promise<Run>
  /** `GET /v1/runs/{id}`: the run with its events and traces. */
  readonly getRun: (runId: string, options?: CallOptions) => Promise<RunDetail>
  /** `PATCH /v1/runs/{id}`, e.g. `{ status: "completed" }`. */
  readonly updateRun: (runId: string, patch: typeof UpdateRun.Encoded, options?: CallOptions) => Promise<Run>
  /** `POST /v1/runs/{id}/events`. */
  readonly appendRunEvent: (
    runId: string,
    event: typeof CreateRunEvent.Encoded,
    options?: CallOptions
  ) => Promise<RunEvent>
  /** `GET /v1/runs/{id}/traces` (first page, newest first). */
  readonly listRunTraces: (runId: string, options?: CallOptions) => Promise<ReadonlyArray<Trace>>
  /** `POST /v1/traces/{trace_id}/review-events`: a human's review outcome on a decision. */
  readonly review: (
    traceId: string,
    review: typeof CreateReviewEvent.Encoded,
    options?: CallOptions
  ) => Promise<ReviewEvent>
  /** `GET /v1/receipts/{id}`: a decision's signed receipt (compact JWS). */
  readonly getReceipt: (
    receiptId: string,
    options?: CallOptions
  ) => Promise<{ readonly receipt_id: string; readonly trace_id: string; readonly jws: string }>
  /** `GET /.well-known/jwks.json`: the keys that verify receipts (fetched once, then kept). */
  readonly jwks: (options?: CallOptions) => Promise<Jwks>
  /** Fetches a decision's receipt and verifies it offline against the service's keys. */
  readonly verifiedReceipt: (receiptId: string, options?: CallOptions) => Promise<ReceiptClaims>
  /** The Effect interface over the same connection settings: every endpoint of the contract. */
  readonly effect: () => Promise<GuardrailClient>
}

export const createGuardrailClient = (options: GuardrailClientOptions): GuardrailClientFacade => {
  let client: Promise<GuardrailClient> | undefined
  const effect = () =>
    (client ??= Effect.runPromise(
      guardrailClient({ baseUrl: options.baseUrl, token: options.apiKey, retry: options.retry })
    ))

  /** Runs a call of the Effect client; rejects with a `GuardrailError`. */
  const call = async <A, E>(
    run: (api: GuardrailClient) => Effect.Effect<A, E>,
    callOptions: CallOptions = {}
  ): Promise<A> => {
    const api = await effect()
    const keyed = (program: Effect.Effect<A, E>) =>
      callOptions.idempotencyKey === undefined ? program : withIdempotencyKey(callOptions.idempotencyKey)(program)
    const exit = await Effect.runPromiseExit(
      keyed(Effect.suspend(() => run(api))),
      callOptions.signal === undefined ? {} : { signal: callOptions.signal }
    )
    if (Exit.isSuccess(exit)) return exit.value
    throw toGuardrailError(exit.cause)
  }

  const decodeEvent = (event: DecideInput) =>
    Schema.decode(ProposedEvent)({
      ...event,
      principal: {
        ...defined({
          agent_id: options.agentId,
          workspace_id: options.workspaceId,
          environment_id: options.environmentId
        }),
        ...event.principal
      } as (typeof ProposedEvent.Encoded)["principal"]
    })

  let keys: Promise<Jwks> | undefined
  const jwks = (callOptions?: CallOptions) => {
    keys ??= call((api) => api.receipts.jwks(), callOptions).catch((error: unknown) => {
      keys = undefined
      throw error
    })
    return keys
  }
  const getReceipt = (receiptId: string, callOptions?: CallOptions) =>
    call((api) => api.receipts.getReceipt({ path: { id: receiptId } }), callOptions)
  const runId = Schema.decode(RunId)
  const traceId = Schema.decode(TraceId)

  return {
    decide: (event, callOptions) =>
      call(
        (api) => Effect.flatMap(decodeEvent(event), (payload) => api.events.authorizeEvent({ payload })),
        callOptions
      ),
    createRun: (run, callOptions) =>
      call(
        (api) => Effect.flatMap(Schema.decode(CreateRun)(run), (payload) => api.runs.createRun({ payload })),
        callOptions
      ),
    getRun: (id, callOptions) =>
      call((api) => Effect.flatMap(runId(id), (id) => api.runs.getRun({ path: { id } })), callOptions),
    updateRun: (id, patch, callOptions) =>
      call(
        (api) =>
          Effect.flatMap(Effect.all([runId(id), Schema.decode(UpdateRun)(patch)]), ([id, payload]) =>
            api.runs.updateRun({ path: { id }, payload })
          ),
        callOptions
      ),
    appendRunEvent: (id, event, callOptions) =>
      call(
        (api) =>
          Effect.flatMap(Effect.all([runId(id), Schema.decode(CreateRunEvent)(event)]), ([id, payload]) =>
            api.runs.appendRunEvent({ path: { id }, payload })
          ),
        callOptions
      ),
    listRunTraces: (id, callOptions) =>
      call(
        (api) =>
          Effect.flatMap(runId(id), (id) =>
            Effect.map(api.runs.listRunTraces({ path: { id }, urlParams: {} }), (page) => page.traces)
          ),
        callOptions
      ),
    review: (id, review, callOptions) =>
      call(
        (api) =>
          Effect.flatMap(Effect.all([traceId(id), Schema.decode(CreateReviewEvent)(review)]), ([trace_id, payload]) =>
            api.reviewEvents.createReviewEvent({ path: { trace_id }, payload })
          ),
        callOptions
      ),
    getReceipt,
    jwks,
    verifiedReceipt: async (receiptId, callOptions) => {
      const [receipt, keySet] = await Promise.all([getReceipt(receiptId, callOptions), jwks(callOptions)])
      return verifyReceipt(receipt, keySet)
    },
    effect
  }
}

/** The entries of `record` whose value is defined. */
const defined = <T extends Record<string, string | undefined>>(record: T) =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>
