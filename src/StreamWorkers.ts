/**
 * The stream worker's consumers, each a layer beside its domain that forks
 * its consumer for the life of the layer. Domains add theirs here.
 */
import { Effect, Layer } from "effect"

const consumers: ReadonlyArray<{ readonly name: string; readonly layer: Layer.Layer<never> }> = []

export const StreamWorkersLive = Layer.mergeAll(
  Layer.effectDiscard(
    Effect.logInfo("stream worker started").pipe(
      Effect.annotateLogs({ consumers: consumers.map((consumer) => consumer.name) })
    )
  ),
  ...consumers.map((consumer) => consumer.layer)
)
