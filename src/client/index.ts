/**
 * `guardrail-service/client`: the typed client of the Guardrail Service API.
 * - `createGuardrailClient({ baseUrl, apiKey })`: Promise methods (decide, runs, reviews, receipts);
 * - `guardrailClient(options)`: the Effect interface, one method per endpoint of the contract;
 * - `verifyReceipt(receipt, jwks)`: a decision's receipt checked offline.
 */
export {
  type ClientOptions,
  CurrentIdempotencyKey,
  type GuardrailClient,
  guardrailClient,
  makeClient,
  type RetryOptions,
  withIdempotencyKey
} from "./Client.js"
export {
  type CallOptions,
  createGuardrailClient,
  type DecideInput,
  type Decision,
  GuardrailError,
  type GuardrailClientFacade,
  type GuardrailClientOptions,
  type GuardrailErrorKind
} from "./Facade.js"
export { type Jwks, type ReceiptClaims, ReceiptVerificationError, verifyReceipt } from "./Receipts.js"
export { retryAfterMillis } from "./Retry.js"
export { GuardrailApi } from "../Api.js"
export * as Errors from "../http/Errors.js"
