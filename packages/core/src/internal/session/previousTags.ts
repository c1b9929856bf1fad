/**
 * The tags errors had before they carried the prefix that keeps them apart from an application's own (see `Errors`).
 * Sessions stored before keep their error as it was written: reading one renames its tag to today's, so the error
 * decodes as the class it is now. Messages also name an error's kind by its previous word, as they always have.
 */
import * as Schema from "effect/Schema"

/** Each tag that changed, today's first and the one it had before second. */
const renamed: ReadonlyArray<readonly [current: string, previous: string]> = [
  ["ProviderTimeout", "Timeout"],
  ["ProviderRateLimited", "RateLimited"],
  ["ProviderQuotaExhausted", "QuotaExhausted"],
  ["ProviderAuthenticationFailed", "AuthenticationFailed"],
  ["ProviderInvalidRequest", "InvalidRequest"],
  ["ProviderCircuitOpen", "CircuitOpen"],
  ["ModelMalformedOutput", "MalformedOutput"],
  ["ResearchBudgetExhausted", "BudgetExhausted"],
  ["ResearchSessionNotFound", "SessionNotFound"],
  ["ResearchSessionCorrupt", "SessionCorrupt"],
  ["ResearchSessionBusy", "SessionBusy"],
  ["ResearchInvalidInput", "InvalidInput"]
]

const currentOf: ReadonlyMap<string, string> = new Map(renamed.map(([current, previous]) => [previous, current]))

const previousOf: ReadonlyMap<string, string> = new Map(renamed)

/** The tag an error had before it carried a prefix, or `tag` itself when it never changed. */
export const previousTag = (tag: string): string => previousOf.get(tag) ?? tag

/** The JSON form of a stored error: a tagged object. */
const StoredError = Schema.Struct({ _tag: Schema.String }, Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/** The JSON form of a stored error: a tagged object. */
export type StoredError = typeof StoredError.Type

/** A stored error under today's tag: one stored under its previous tag is renamed, any other passes as it is. */
const underCurrentTag = Schema.transform(StoredError, StoredError, {
  strict: true,
  decode: (stored) => {
    const current = currentOf.get(stored._tag)
    return current === undefined ? stored : { ...stored, _tag: current }
  },
  encode: (error) => error
})

/** `schema` reading errors stored under their previous tags too; it writes today's. */
export const readingPrevious = <A, I, R>(schema: Schema.Schema<A, I, R>): Schema.Schema<A, StoredError, R> =>
  Schema.compose(underCurrentTag, schema, { strict: false })
