/**
 * What model calls cost: a price table kept as data (USD per million tokens, longest name match wins), so prices can
 * be changed without a code change.
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import defaultTableJson from "./data/model-prices.json" with { type: "json" }
import { longestMatch } from "./internal/text/longestMatch.js"
import type { Usage } from "./Usage.js"

/** The price of one model family, USD per million tokens. */
export class Price extends Schema.Class<Price>("@deep-research/core/Price")({
  match: Schema.String,
  input: Schema.Number,
  cachedInput: Schema.optional(Schema.Number),
  output: Schema.Number
}) {}

/** A price table. */
export class PriceTable extends Schema.Class<PriceTable>("@deep-research/core/PriceTable")({
  prices: Schema.Array(Price)
}) {}

/** The table shipped with the library. */
export const defaultTable: PriceTable = Schema.decodeUnknownSync(PriceTable)(defaultTableJson)

/** The price table in use. */
export class Pricing extends Context.Tag("@deep-research/core/Pricing")<Pricing, PriceTable>() {}

/** Uses the given table. */
export const layer = (table: PriceTable): Layer.Layer<Pricing> => Layer.succeed(Pricing, table)

/** Uses the table shipped with the library. */
export const layerDefault: Layer.Layer<Pricing> = layer(defaultTable)

/** Decodes a table from JSON text (e.g. a user's own file). */
export const decodeTable = Schema.decodeUnknown(Schema.parseJson(PriceTable))

/** The price of a model, if the table knows it. */
export const priceOf = (table: PriceTable, model: string): Price | undefined => longestMatch(table.prices, model)

/** The cost of one call in USD; 0 for models the table does not know (local models). */
export const costOf = (table: PriceTable, model: string, usage: Usage): number => {
  const price = priceOf(table, model)
  if (price === undefined) return 0
  const cached = Math.min(usage.cachedInputTokens, usage.inputTokens)
  const uncached = usage.inputTokens - cached
  return (
    (uncached * price.input + cached * (price.cachedInput ?? price.input) + usage.outputTokens * price.output) / 1e6
  )
}
