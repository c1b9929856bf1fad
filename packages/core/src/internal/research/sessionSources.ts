/**
 * A unit's sources as the session keeps them: once per page. Researchers of one round run in parallel, each with its
 * own ledger, so the same page found by two of them comes back under two ids; the session keeps the first and the
 * later unit's result points at it (its findings cite by position in `sourceIds`, so the positions stay).
 */
import * as Novelty from "../../Novelty.js"
import { TopicResult } from "../../Research.js"
import type { Source } from "../../Source.js"

/** The session's sources with a unit's new ones added, and the unit's result pointing at the sources kept. */
export const mergeUnitSources = (
  stored: ReadonlyArray<Source>,
  found: ReadonlyArray<Source>,
  result: TopicResult
): { readonly sources: ReadonlyArray<Source>; readonly result: TopicResult } => {
  const ids = new Set(stored.map((source) => source.id))
  const byUrl = new Map(stored.map((source) => [Novelty.normalizeUrl(source.url), source.id] as const))
  const sameAs = new Map<string, string>()
  const added: Array<Source> = []
  for (const source of found) {
    if (ids.has(source.id)) continue
    const key = Novelty.normalizeUrl(source.url)
    const kept = byUrl.get(key)
    if (kept !== undefined) {
      sameAs.set(source.id, kept)
      continue
    }
    byUrl.set(key, source.id)
    ids.add(source.id)
    added.push(source)
  }
  if (sameAs.size === 0) return { sources: added.length === 0 ? stored : [...stored, ...added], result }
  const sourceIds = result.sourceIds.map((id) => sameAs.get(id) ?? id)
  // A result's parts, already valid: not validated again.
  return { sources: [...stored, ...added], result: new TopicResult({ ...result, sourceIds }, true) }
}
