/** SQL of the workspace's LLM prices. Every query takes the workspace id. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { dieOnErrors } from "../platform/Sql.js"

export interface PriceRow {
  readonly model: string
  readonly currency: string
  /** bigint columns arrive as strings from node-postgres. */
  readonly input_per_million_minor: string | number
  readonly output_per_million_minor: string | number
}

export class PricingRepo extends Effect.Service<PricingRepo>()("billing/PricingRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`model, currency, input_per_million_minor, output_per_million_minor`
    return dieOnErrors({
      list: (workspaceId: string) =>
        sql<PriceRow>`select ${columns} from llm_prices where workspace_id = ${workspaceId} order by model`,
      find: (workspaceId: string, model: string) =>
        sql<PriceRow>`select ${columns} from llm_prices
                      where workspace_id = ${workspaceId} and model = ${model}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),
      upsert: (workspaceId: string, model: string, input: number, output: number) =>
        sql<PriceRow>`insert into llm_prices (workspace_id, model, input_per_million_minor, output_per_million_minor)
                      values (${workspaceId}, ${model}, ${input}, ${output})
                      on conflict (workspace_id, model) do update
                        set input_per_million_minor = excluded.input_per_million_minor,
                            output_per_million_minor = excluded.output_per_million_minor,
                            updated_at = now()
                      returning ${columns}`.pipe(Effect.map((rows) => rows[0]!)),
      remove: (workspaceId: string, model: string) =>
        sql<{ model: string }>`delete from llm_prices where workspace_id = ${workspaceId} and model = ${model}
                               returning model`.pipe(Effect.map((rows) => rows.length > 0))
    })
  })
}) {}
