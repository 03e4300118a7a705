/** SQL of the workspace's LLM prices. Every query takes the workspace id. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { dieOnErrors } from "../platform/Sql.js"
import { storeWithinCap } from "../platform/WorkspaceCaps.js"

const PriceRow = Schema.Struct({
  model: Schema.String,
  currency: Schema.String,
  /** bigint columns arrive as strings from node-postgres. */
  input_per_million_minor: Schema.Union(Schema.String, Schema.Number),
  output_per_million_minor: Schema.Union(Schema.String, Schema.Number)
})
export type PriceRow = typeof PriceRow.Type

const ModelKey = Schema.Struct({ workspaceId: Schema.String, model: Schema.String })

export class PricingRepo extends Effect.Service<PricingRepo>()("billing/PricingRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`model, currency, input_per_million_minor, output_per_million_minor`

    const list = SqlSchema.findAll({
      Request: Schema.String,
      Result: PriceRow,
      execute: (workspaceId) =>
        sql`select ${columns} from llm_prices where workspace_id = ${workspaceId} order by model`
    })
    const find = SqlSchema.findOne({
      Request: ModelKey,
      Result: PriceRow,
      execute: ({ model, workspaceId }) =>
        sql`select ${columns} from llm_prices where workspace_id = ${workspaceId} and model = ${model}`
    })
    const upsert = SqlSchema.single({
      Request: Schema.Struct({
        workspaceId: Schema.String,
        model: Schema.String,
        input: Schema.Number,
        output: Schema.Number
      }),
      Result: PriceRow,
      execute: ({ input, model, output, workspaceId }) =>
        sql`insert into llm_prices (workspace_id, model, input_per_million_minor, output_per_million_minor)
            values (${workspaceId}, ${model}, ${input}, ${output})
            on conflict (workspace_id, model) do update
              set input_per_million_minor = excluded.input_per_million_minor,
                  output_per_million_minor = excluded.output_per_million_minor,
                  updated_at = now()
            returning ${columns}`
    })
    const remove = SqlSchema.findAll({
      Request: ModelKey,
      Result: Schema.Struct({ model: Schema.String }),
      execute: ({ model, workspaceId }) =>
        sql`delete from llm_prices where workspace_id = ${workspaceId} and model = ${model} returning model`
    })

    return dieOnErrors({
      list: (workspaceId: string) => list(workspaceId),
      find: (workspaceId: string, model: string) => find({ workspaceId, model }),
      /** Sets the model's price; a model new to a workspace that already prices `max` is refused (none). */
      upsert: (workspaceId: string, model: string, input: number, output: number, max: number) =>
        storeWithinCap(
          sql,
          "llm_prices",
          workspaceId,
          max,
          Effect.map(find({ workspaceId, model }), Option.isSome),
          upsert({ workspaceId, model, input, output })
        ),
      remove: (workspaceId: string, model: string) =>
        Effect.map(remove({ workspaceId, model }), (rows) => rows.length > 0)
    })
  })
}) {}
