/**
 * Duplicate detection and novelty of sources. A source is the same as one already held when its normalised URL
 * matches, when its normalised title (over 20 characters) matches, or when the Jaccard similarity of the 5-character
 * shingles of the two texts reaches 0.8 (texts are not compared when one is under 0.3 of the other's length). A source
 * that is kept gets a novelty tag from its best similarity to what is held: duplicate, related or new.
 *
 * This module is the index; what it compares is normalised by `internal/text/normalize.ts`. The index sketches each
 * text with MinHash (one-permutation hashing, 64 bins; the sketches and the shingle tables are in
 * `internal/text/minHash.ts`). Up to 512 held texts every one is screened by its sketch; beyond that, candidates
 * come from locality-sensitive hashing (16 bands of 4 rows), so a check costs about the length of the new text plus a
 * bounded number of candidates, never the size of the index.
 * Similarities are computed exactly on the best few candidates; the sketch only decides whom to compare with.
 */
import type { ResearchConfig } from "./ResearchConfig.js"
import type { Novelty as NoveltyTag } from "./Source.js"
import { normalizeText, normalizeTitle, normalizeUrl } from "./internal/text/normalize.js"
import {
  bandKey,
  bands,
  estimate,
  jaccardOf,
  type Shingles,
  type ShingleTable,
  shingleTable,
  sketch
} from "./internal/text/minHash.js"

// =============================================================================
// Options and results
// =============================================================================

/** The thresholds of duplicate detection and novelty. */
export interface Options {
  /** Titles count as the same source only when longer than this many characters (after normalisation). */
  readonly titleMinLength: number
  /** Shingle Jaccard similarity at which two texts are the same source. */
  readonly duplicateThreshold: number
  /** Texts whose length ratio (shorter / longer) is below this are not compared. */
  readonly lengthRatioFloor: number
  /** Novelty: at least this similar is tagged a duplicate. */
  readonly noveltyDuplicate: number
  /** Novelty: at least this similar is tagged related. */
  readonly noveltyRelated: number
}

/** The thresholds of the design. */
export const defaultOptions: Options = {
  titleMinLength: 20,
  duplicateThreshold: 0.8,
  lengthRatioFloor: 0.3,
  noveltyDuplicate: 0.7,
  noveltyRelated: 0.3
}

/** The thresholds of a research configuration. */
export const optionsFromConfig = (config: ResearchConfig): Options => ({
  titleMinLength: config.titleDedupMinLength,
  duplicateThreshold: config.contentDuplicateThreshold,
  lengthRatioFloor: config.contentLengthRatioFloor,
  noveltyDuplicate: config.noveltyDuplicate,
  noveltyRelated: config.noveltyRelated
})

/** What the index compares: an id to point back at, a URL, a title and the text. */
export interface Document {
  readonly id: string
  readonly url: string
  readonly title: string
  readonly text: string
}

/** Why a document is a duplicate. */
export type DuplicateReason = "url" | "title" | "content"

/** The same source as one already held. */
export interface Duplicate {
  readonly _tag: "Duplicate"
  readonly reason: DuplicateReason
  /** The id of the held document it duplicates. */
  readonly of: string
  readonly similarity: number
}

/** A new source, with its novelty against what is held. */
export interface Unique {
  readonly _tag: "Unique"
  readonly novelty: NoveltyTag
  /** The best similarity to a held document, 0 when none is comparable. */
  readonly similarity: number
  /** The id of the most similar held document, if any is similar at all. */
  readonly nearest: string | undefined
}

/** The verdict on a document. */
export type Verdict = Duplicate | Unique

/**
 * An index of documents. It is a mutable structure for one owner (a researcher, a benchmark): don't share one
 * between fibers that add to it concurrently.
 */
export interface Index {
  /** How many documents it holds. */
  readonly size: () => number
  /** The verdict on a document, without adding it. */
  readonly check: (document: Document) => Verdict
  /** Adds a document whatever it duplicates (for sources known beforehand). */
  readonly add: (document: Document) => void
  /** Checks a document and adds it when it is unique. */
  readonly insert: (document: Document) => Verdict
}

// =============================================================================
// Normalisation (the comparable forms of URLs, titles and texts: `internal/text/normalize.ts`)
// =============================================================================

export { normalizeText, normalizeTitle, normalizeUrl }

// =============================================================================
// Similarity
// =============================================================================

/** The Jaccard similarity of the 5-character shingles of two texts, as they are (no normalisation, no length rule). */
export const jaccard = (a: string, b: string): number => jaccardOf(shingleTable(a), shingleTable(b).shingles)

/**
 * The similarity the index uses: shingle Jaccard of the normalised texts, or 0 when either is empty or the shorter is
 * under `lengthRatioFloor` of the longer.
 */
export const similarity = (a: string, b: string, options: Options = defaultOptions): number => {
  const x = normalizeText(a)
  const y = normalizeText(b)
  if (!comparableLengths(x.length, y.length, options.lengthRatioFloor)) return 0
  return jaccard(x, y)
}

const comparableLengths = (a: number, b: number, floor: number): boolean => {
  if (a === 0 || b === 0) return false
  return Math.min(a, b) / Math.max(a, b) >= floor
}

/** The novelty tag of a similarity. */
export const noveltyOf = (similarity: number, options: Options = defaultOptions): NoveltyTag =>
  similarity >= options.noveltyDuplicate ? "duplicate" : similarity >= options.noveltyRelated ? "related" : "new"

// =============================================================================
// Index
// =============================================================================

// A candidate whose sketch estimate is this far under the related threshold is not compared exactly: the estimate's
// standard error at 0.3 with 64 bins is under 0.06, so a true 0.3 is missed less than once in a hundred.
const estimateMargin = 0.15
// Exact comparisons per check at most, so that a corpus of near-copies stays linear.
const maxExactComparisons = 4
// Up to this many held documents, every one is screened by its sketch, so related sources (0.3 to 0.7, which bands
// of four rows catch only sometimes) are found too. A researcher's index is far below it; past it, novelty under 0.7
// rests on the bands alone.
const fullScanLimit = 512
// A band bucket only grows large when a corpus is made of near-copies of one template; its most recent entries are
// then as good as any, and looking at no more than these keeps every check bounded.
const bucketScanLimit = 16

interface Prepared {
  readonly document: Document
  readonly url: string
  readonly title: string
  readonly text: string
  readonly signature: Uint32Array | undefined
}

interface Held {
  readonly id: string
  readonly text: string
  readonly signature: Uint32Array
  shingles: Shingles | undefined
}

/** What the index's functions share: the documents held, by URL, title and band, and a check's scratch. */
interface Store {
  readonly options: Options
  readonly floor: number
  readonly byUrl: Map<string, string>
  readonly byTitle: Map<string, string>
  readonly held: Array<Held>
  readonly buckets: Array<Map<number, Array<number>>>
  count: number
  /** Marks candidates already seen during one check (the check's `stamp`) without allocating a set per check. */
  readonly seenStamp: Array<number>
  stamp: number
  /** The current check's candidates, in arrays reused from check to check. */
  readonly candidateIndex: Array<number>
  readonly candidateEstimate: Array<number>
  candidateCount: number
  /** The shingles of the text the last check compared exactly, kept with it when it is added. */
  checkedShingles: Shingles | undefined
}

const prepare = (document: Document): Prepared => {
  const text = normalizeText(document.text)
  return {
    document,
    url: normalizeUrl(document.url),
    title: normalizeTitle(document.title),
    text,
    signature: text.length === 0 ? undefined : sketch(text)
  }
}

const shinglesOf = (entry: Held): Shingles => (entry.shingles ??= shingleTable(entry.text).shingles)

/** The duplicate by URL or by title, if the document is one. */
const sameIdentity = (store: Store, prepared: Prepared): Verdict | undefined => {
  if (prepared.url !== "") {
    const of = store.byUrl.get(prepared.url)
    if (of !== undefined) return { _tag: "Duplicate", reason: "url", of, similarity: 1 }
  }
  if (prepared.title.length > store.options.titleMinLength) {
    const of = store.byTitle.get(prepared.title)
    if (of !== undefined) return { _tag: "Duplicate", reason: "title", of, similarity: 1 }
  }
  return undefined
}

/** Adds a held document to the check's candidates when its length is comparable and its estimate not too low. */
const consider = (store: Store, prepared: Prepared, signature: Uint32Array, index: number): void => {
  if (store.seenStamp[index] === store.stamp) return
  store.seenStamp[index] = store.stamp
  const entry = store.held[index]
  if (entry === undefined) return
  if (!comparableLengths(prepared.text.length, entry.text.length, store.options.lengthRatioFloor)) return
  const value = estimate(signature, entry.signature)
  if (value < store.floor) return
  store.candidateIndex[store.candidateCount] = index
  store.candidateEstimate[store.candidateCount] = value
  store.candidateCount++
}

/** Screens the held documents by their sketches: every one in a small index, those sharing a band in a large one. */
const gatherCandidates = (store: Store, prepared: Prepared, signature: Uint32Array): void => {
  store.stamp++
  store.candidateCount = 0
  if (store.held.length <= fullScanLimit) {
    for (let index = 0; index < store.held.length; index++) consider(store, prepared, signature, index)
    return
  }
  for (let band = 0; band < bands; band++) {
    const bucket = store.buckets[band]?.get(bandKey(signature, band))
    if (bucket === undefined) continue
    for (let i = Math.max(0, bucket.length - bucketScanLimit); i < bucket.length; i++) {
      consider(store, prepared, signature, bucket[i] ?? -1)
    }
  }
}

/**
 * Compares the candidates exactly, most similar first by the sketch (picked one at a time: only a few are ever
 * compared exactly). The exact best is almost always among the first, and a candidate whose estimate is well under
 * the best exact value found cannot plausibly beat it.
 */
const compareCandidates = (store: Store, prepared: Prepared): Verdict => {
  let best = 0
  let nearest: string | undefined = undefined
  let own: ShingleTable | undefined = undefined
  for (let compared = 0; compared < maxExactComparisons; compared++) {
    let pick = -1
    for (let i = 0; i < store.candidateCount; i++) {
      if ((store.candidateEstimate[i] ?? -1) > (pick < 0 ? -1 : (store.candidateEstimate[pick] ?? -1))) pick = i
    }
    if (pick < 0) break
    const value = store.candidateEstimate[pick] ?? -1
    store.candidateEstimate[pick] = -1
    if (value < best - estimateMargin) break
    const entry = store.held[store.candidateIndex[pick] ?? -1]
    if (entry === undefined) continue
    if (own === undefined) {
      own = shingleTable(prepared.text)
      store.checkedShingles = own.shingles
    }
    const similarity = jaccardOf(own, shinglesOf(entry))
    if (similarity > best) {
      best = similarity
      nearest = entry.id
    }
    if (best >= store.options.duplicateThreshold && nearest !== undefined) {
      return { _tag: "Duplicate", reason: "content", of: nearest, similarity: best }
    }
  }
  return {
    _tag: "Unique",
    novelty: noveltyOf(best, store.options),
    similarity: best,
    nearest: best > 0 ? nearest : undefined
  }
}

const check = (store: Store, prepared: Prepared): Verdict => {
  store.checkedShingles = undefined
  const duplicate = sameIdentity(store, prepared)
  if (duplicate !== undefined) return duplicate
  if (prepared.signature === undefined) return { _tag: "Unique", novelty: "new", similarity: 0, nearest: undefined }
  gatherCandidates(store, prepared, prepared.signature)
  return compareCandidates(store, prepared)
}

const add = (store: Store, prepared: Prepared, shingles?: Shingles): void => {
  const { id } = prepared.document
  const { byTitle, byUrl, options } = store
  store.count++
  if (prepared.url !== "" && !byUrl.has(prepared.url)) byUrl.set(prepared.url, id)
  if (prepared.title.length > options.titleMinLength && !byTitle.has(prepared.title)) byTitle.set(prepared.title, id)
  const signature = prepared.signature
  if (signature === undefined) return
  const index = store.held.length
  store.held.push({ id, text: prepared.text, signature, shingles })
  for (let band = 0; band < bands; band++) {
    const map = store.buckets[band]
    if (map === undefined) continue
    const key = bandKey(signature, band)
    const bucket = map.get(key)
    if (bucket === undefined) map.set(key, [index])
    else bucket.push(index)
  }
}

/** An empty index with the given thresholds. */
export const make = (options: Options = defaultOptions): Index => {
  const store: Store = {
    options,
    floor: Math.max(0, Math.min(options.noveltyRelated, options.duplicateThreshold) - estimateMargin),
    byUrl: new Map(),
    byTitle: new Map(),
    held: [],
    buckets: Array.from({ length: bands }, () => new Map()),
    count: 0,
    seenStamp: [],
    stamp: 0,
    candidateIndex: [],
    candidateEstimate: [],
    candidateCount: 0,
    checkedShingles: undefined
  }
  return {
    size: () => store.count,
    check: (document) => check(store, prepare(document)),
    add: (document) => add(store, prepare(document)),
    insert: (document) => {
      const prepared = prepare(document)
      const verdict = check(store, prepared)
      if (verdict._tag === "Unique") add(store, prepared, store.checkedShingles)
      return verdict
    }
  }
}
