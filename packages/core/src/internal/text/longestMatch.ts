/** The entry whose `match` is the longest substring of `name` (case-insensitive), if any. */
export const longestMatch = <A extends { readonly match: string }>(
  entries: ReadonlyArray<A>,
  name: string
): A | undefined => {
  const lower = name.toLowerCase()
  let best: A | undefined
  for (const entry of entries) {
    const match = entry.match.toLowerCase()
    if (lower.includes(match) && (best === undefined || match.length > best.match.length)) {
      best = entry
    }
  }
  return best
}
