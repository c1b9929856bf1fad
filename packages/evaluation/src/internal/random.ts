/** A small seeded random generator, so that sampling is the same for the same seed on every machine. */

/** Uniform numbers in [0, 1) from a 32-bit seed (mulberry32). */
export const seeded = (seed: number): (() => number) => {
  let state = Math.trunc(seed) >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** `count` items of `items` chosen without replacement, in their original order. */
export const sample = <A>(items: ReadonlyArray<A>, count: number, seed: number): ReadonlyArray<A> => {
  if (count >= items.length) return items
  if (count <= 0) return []
  const next = seeded(seed)
  const indices = items.map((_, i) => i)
  for (let i = indices.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1))
    const swap = indices[i] ?? i
    indices[i] = indices[j] ?? j
    indices[j] = swap
  }
  return indices
    .slice(0, count)
    .sort((a, b) => a - b)
    .flatMap((i) => {
      const item = items[i]
      return item === undefined ? [] : [item]
    })
}
