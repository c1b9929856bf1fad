/**
 * The text fingerprints of duplicate detection: a text's 5-character shingles as pairs of rolling hashes, kept in an
 * open-addressing table for exact Jaccard similarity, and its MinHash sketch (one-permutation hashing, 64 bins) with
 * the keys of its locality-sensitive bands (16 bands of 4 rows), which `Novelty`'s index screens candidates with.
 */

const shingleLength = 5
const bins = 64
// Four rows a band: a pair at 0.7 similarity shares a band with probability 0.99, an unrelated pair (0.05) almost
// never, so buckets stay small however large the index grows.
const rowsPerBand = 4
export const bands = bins / rowsPerBand
const binBits = 6
const valueBits = 32 - binBits
const valueMask = (1 << valueBits) - 1
const emptyBin = 0xffffffff

const baseA = 0x01000193
const baseB = 0x5bd1e995
const powA = Math.imul(Math.imul(baseA, baseA), Math.imul(baseA, baseA))
const powB = Math.imul(Math.imul(baseB, baseB), Math.imul(baseB, baseB))

const mix = (h: number): number => {
  let x = h ^ (h >>> 16)
  x = Math.imul(x, 0x85ebca6b)
  x ^= x >>> 13
  x = Math.imul(x, 0xc2b2ae35)
  return (x ^ (x >>> 16)) >>> 0
}

/**
 * Calls `f` with two independent 32-bit rolling hashes of every 5-character window of `text` (of the whole text when
 * it is shorter than a window).
 */
const forEachShingle = (text: string, f: (a: number, b: number) => void): void => {
  if (text.length === 0) return
  if (text.length < shingleLength) {
    let a = 0
    let b = 0
    for (let i = 0; i < text.length; i++) {
      a = (Math.imul(a, baseA) + text.charCodeAt(i) + 1) | 0
      b = (Math.imul(b, baseB) + text.charCodeAt(i) + 1) | 0
    }
    f(mix(a), mix(b ^ 0x9e3779b9))
    return
  }
  let a = 0
  let b = 0
  for (let i = 0; i < shingleLength; i++) {
    a = (Math.imul(a, baseA) + text.charCodeAt(i) + 1) | 0
    b = (Math.imul(b, baseB) + text.charCodeAt(i) + 1) | 0
  }
  f(mix(a), mix(b ^ 0x9e3779b9))
  for (let i = shingleLength; i < text.length; i++) {
    const out = text.charCodeAt(i - shingleLength) + 1
    const next = text.charCodeAt(i) + 1
    a = (Math.imul(a - Math.imul(out, powA), baseA) + next) | 0
    b = (Math.imul(b - Math.imul(out, powB), baseB) + next) | 0
    f(mix(a), mix(b ^ 0x9e3779b9))
  }
}

/**
 * A text's distinct shingles, each as 53 bits of a pair of independent 32-bit hashes (collisions stay negligible):
 * what a source of the index keeps for later comparisons, 8 bytes a shingle.
 */
export type Shingles = Float64Array

/**
 * The shingles of the text being checked, with an open-addressing table over them, so that a kept source's shingles
 * are looked up in a probe or two each and nothing is sorted. The table is let go once the check is done: kept with
 * every source, tables took 16 to 24 bytes a character, most of what a session in flight holds.
 */
export interface ShingleTable {
  readonly shingles: Shingles
  /** Slots holding 1 + the index of a shingle, 0 when empty; its length is a power of two. */
  readonly slots: Int32Array
}

/** 2^21: the first hash's 32 bits go above the second's top 21. */
const highShift = 2097152

// The hash's low 32 bits (the second hash's top 21 under the first's low 11), mixed.
const slotOf = (hash: number, mask: number): number => Math.imul(hash | 0, 0x9e3779b1) & mask

export const shingleTable = (text: string): ShingleTable => {
  const capacity = Math.max(1, text.length - shingleLength + 1)
  let tableSize = 2
  while (tableSize < capacity * 2) tableSize *= 2
  const mask = tableSize - 1
  const slots = new Int32Array(tableSize)
  const shingles = new Float64Array(capacity)
  let size = 0
  forEachShingle(text, (a, b) => {
    const hash = a * highShift + (b >>> 11)
    let slot = slotOf(hash, mask)
    for (;;) {
      const held = slots[slot] ?? 0
      if (held === 0) {
        shingles[size++] = hash
        slots[slot] = size
        return
      }
      if (shingles[held - 1] === hash) return
      slot = (slot + 1) & mask
    }
  })
  return { shingles: size === capacity ? shingles : shingles.slice(0, size), slots }
}

const contains = (table: ShingleTable, hash: number): boolean => {
  const mask = table.slots.length - 1
  let slot = slotOf(hash, mask)
  for (;;) {
    const held = table.slots[slot] ?? 0
    if (held === 0) return false
    if (table.shingles[held - 1] === hash) return true
    slot = (slot + 1) & mask
  }
}

export const jaccardOf = (table: ShingleTable, other: Shingles): number => {
  const size = table.shingles.length
  if (size === 0 || other.length === 0) return 0
  let common = 0
  for (let i = 0; i < other.length; i++) {
    if (contains(table, other[i] ?? 0)) common++
  }
  return common / (size + other.length - common)
}

// One-permutation MinHash: each shingle falls in one of 64 bins by its top bits and the bin keeps the smallest rest.
// Empty bins borrow from the next filled bin, marked with the distance, so short texts still band sensibly. The rolling
// hash is inlined here because this loop runs over every character the index sees.
export const sketch = (text: string): Uint32Array => {
  const signature = new Uint32Array(bins).fill(emptyBin)
  const length = text.length
  const window = Math.min(shingleLength, length)
  let a = 0
  for (let i = 0; i < window; i++) a = (Math.imul(a, baseA) + text.charCodeAt(i) + 1) | 0
  for (let i = window; i <= length; i++) {
    let x = a ^ (a >>> 16)
    x = Math.imul(x, 0x85ebca6b)
    x ^= x >>> 13
    x = Math.imul(x, 0xc2b2ae35)
    x = (x ^ (x >>> 16)) >>> 0
    const bin = x >>> valueBits
    const value = x & valueMask
    if (value < (signature[bin] ?? emptyBin)) signature[bin] = value
    if (i < length) {
      a = (Math.imul(a - Math.imul(text.charCodeAt(i - shingleLength) + 1, powA), baseA) + text.charCodeAt(i) + 1) | 0
    }
  }
  const dense = new Uint32Array(bins)
  for (let i = 0; i < bins; i++) {
    let distance = 0
    while (distance < bins && signature[(i + distance) % bins] === emptyBin) distance++
    const value = signature[(i + distance) % bins] ?? emptyBin
    dense[i] = value === emptyBin ? emptyBin : ((distance << valueBits) | value) >>> 0
  }
  return dense
}

export const bandKey = (signature: Uint32Array, band: number): number => {
  let hash = 0x9e3779b9
  for (let row = 0; row < rowsPerBand; row++) {
    hash = mix((hash ^ (signature[band * rowsPerBand + row] ?? 0)) | 0)
  }
  // 53 bits: the first row's value keeps unrelated bands apart, the mixed rows make collisions negligible.
  return (signature[band * rowsPerBand] ?? 0) * 2_097_152 + (hash >>> 11)
}

export const estimate = (a: Uint32Array, b: Uint32Array): number => {
  let same = 0
  for (let i = 0; i < bins; i++) if (a[i] === b[i]) same++
  return same / bins
}
