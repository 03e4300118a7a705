/**
 * The workspace's LLM prices and what a call costs under them. Prices are
 * per million tokens in minor units of USD (cents); costs are computed
 * exactly in USD nanos (1 cent = 10^7 nanos) and rounded to the nearest cent
 * for `cost_minor`.
 */
import { Effect, Option } from "effect"
import { auditedWrites } from "../audit/Chain.js"
import { BadRequest, NotFound } from "../http/Errors.js"
import { AppConfig } from "../platform/Config.js"
import { LlmPrice, MAX_MODEL_LENGTH } from "./Domain.js"
import { capReached } from "../platform/WorkspaceCaps.js"
import { type PriceRow, PricingRepo } from "./PricingRepo.js"
import { makeNoticeCache } from "../platform/ChangeNotices.js"

const NANOS_PER_MINOR = 10_000_000n
export { MAX_MODEL_LENGTH }

/** Prices of one model, per million tokens, in cents. */
export interface ModelPrice {
  readonly model: string
  readonly inputPerMillionMinor: number
  readonly outputPerMillionMinor: number
}

export interface Cost {
  readonly usdNanos: bigint
  readonly minor: number
}

export const normalizeModel = (model: string) => model.trim().toLowerCase()

/** Exact cost of `promptTokens` in and `completionTokens` out (per-million cents x 10^7 / 10^6 = x 10 nanos). */
export const costOf = (price: ModelPrice, promptTokens: number, completionTokens: number): Cost => {
  const usdNanos =
    (BigInt(Math.max(0, Math.trunc(promptTokens))) * BigInt(price.inputPerMillionMinor) +
      BigInt(Math.max(0, Math.trunc(completionTokens))) * BigInt(price.outputPerMillionMinor)) *
    10n
  return { usdNanos, minor: Number((usdNanos + NANOS_PER_MINOR / 2n) / NANOS_PER_MINOR) }
}

export const minorToNanos = (minor: number) => BigInt(Math.trunc(minor)) * NANOS_PER_MINOR

const toModelPrice = (row: PriceRow): ModelPrice => ({
  model: row.model,
  inputPerMillionMinor: Number(row.input_per_million_minor),
  outputPerMillionMinor: Number(row.output_per_million_minor)
})

const toLlmPrice = (row: PriceRow) => {
  const price = toModelPrice(row)
  return new LlmPrice({
    model: price.model,
    currency: row.currency,
    input_per_million_minor: price.inputPerMillionMinor,
    output_per_million_minor: price.outputPerMillionMinor,
    input_per_million_usd_nanos: minorToNanos(price.inputPerMillionMinor).toString(),
    output_per_million_usd_nanos: minorToNanos(price.outputPerMillionMinor).toString(),
    source: "workspace"
  })
}

const checkedModel = (raw: string) => {
  const model = normalizeModel(raw)
  return model.length === 0 || model.length > MAX_MODEL_LENGTH
    ? Effect.fail(
        new BadRequest({
          code: "validation_failed",
          message: `model: expected a model name of 1 to ${MAX_MODEL_LENGTH} characters.`,
          details: [{ path: "model", message: "expected a non-blank model name" }]
        })
      )
    : Effect.succeed(model)
}

export class Pricing extends Effect.Service<Pricing>()("billing/Pricing", {
  scoped: Effect.gen(function* () {
    const repo = yield* PricingRepo
    const maxPrices = (yield* AppConfig).maxLlmPricesPerWorkspace
    // The gateway reads prices per request: cached until the workspace's prices change (in any instance).
    const cache = yield* makeNoticeCache<Option.Option<ModelPrice>>("llm_pricing")
    const audited = yield* auditedWrites
    /**
     * A write in the audit chain, then the cache drop: dropped before the commit, a gateway call pricing in between
     * would cache the old price again.
     */
    const written = <A, E, R>(workspaceId: string, write: Effect.Effect<A, E, R>) =>
      Effect.tap(audited(write), () => cache.changed(workspaceId))

    const list = Effect.fn("Pricing.list")(function* (workspaceId: string) {
      return (yield* repo.list(workspaceId)).map(toLlmPrice)
    })

    const put = Effect.fn("Pricing.put")(function* (
      workspaceId: string,
      rawModel: string,
      input: { readonly input_per_million_minor: number; readonly output_per_million_minor: number }
    ) {
      const model = yield* checkedModel(rawModel)
      const row = yield* written(
        workspaceId,
        repo.upsert(workspaceId, model, input.input_per_million_minor, input.output_per_million_minor, maxPrices)
      )
      if (Option.isNone(row)) {
        return yield* capReached("price_limit_reached", maxPrices, "model prices", "MAX_LLM_PRICES_PER_WORKSPACE")
      }
      return toLlmPrice(row.value)
    })

    const remove = Effect.fn("Pricing.remove")(function* (workspaceId: string, rawModel: string) {
      const model = yield* checkedModel(rawModel)
      const removed = yield* written(workspaceId, repo.remove(workspaceId, model))
      if (!removed) {
        return yield* new NotFound({
          code: "price_not_found",
          message: `No price is set for model ${model} in this workspace.`
        })
      }
    })

    /** The price of a raw model string (normalized before lookup); none when unpriced. */
    const priceOf = (workspaceId: string, rawModel: string) => {
      const model = normalizeModel(rawModel)
      return model.length === 0 || model.length > MAX_MODEL_LENGTH
        ? Effect.succeed(Option.none<ModelPrice>())
        : cache.get(`${workspaceId}|${model}`, Effect.map(repo.find(workspaceId, model), Option.map(toModelPrice)))
    }

    /** `priceOf` from the cache alone (undefined when not cached). */
    const peekPrice = (workspaceId: string, rawModel: string) => {
      const model = normalizeModel(rawModel)
      return model.length === 0 || model.length > MAX_MODEL_LENGTH
        ? Option.none<ModelPrice>()
        : cache.peek(`${workspaceId}|${model}`)
    }

    return { list, put, remove, priceOf, peekPrice }
  }),
  dependencies: [PricingRepo.Default]
}) {}
