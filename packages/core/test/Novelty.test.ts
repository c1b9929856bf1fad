import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Novelty from "../src/Novelty.js"
import * as ResearchConfig from "../src/ResearchConfig.js"

// A deterministic stream of lowercase letters in which every 5-character window is distinct, so that the shingle
// sets of two windows of it overlap exactly where the windows overlap.
const letters = (() => {
  let seed = 7
  const next = () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return Array.from({ length: 20_000 }, () => "abcdefghijklmnopqrstuvwxyz"[Math.floor(next() * 26)]).join("")
})()

const naiveJaccard = (a: string, b: string): number => {
  const shingles = (text: string) => new Set(Array.from({ length: text.length - 4 }, (_, i) => text.slice(i, i + 5)))
  const x = shingles(a)
  const y = shingles(b)
  const common = [...x].filter((s) => y.has(s)).length
  return common / (x.size + y.size - common)
}

/**
 * Two texts whose shingle Jaccard is (n - k) / (n + k): windows of n shingles, the second shifted by k. `offset`
 * picks a fresh part of the stream so that pairs made for different documents share nothing.
 */
const pair = (n: number, k: number, offset = 0): readonly [string, string] => {
  const length = n + 4
  return [letters.slice(offset, offset + length), letters.slice(offset + k, offset + k + length)]
}

const doc = (id: string, text: string, url = `https://example.com/${id}`, title = id): Novelty.Document => ({
  id,
  url,
  title,
  text
})

describe("Novelty", () => {
  it("builds its edge cases from texts of exactly known similarity", () => {
    const [a, b] = pair(900, 100)
    assert.strictEqual(naiveJaccard(a, b), 0.8)
    assert.strictEqual(Novelty.jaccard(a, b), 0.8)
    const [c, d] = pair(900, 101)
    assert.strictEqual(Novelty.jaccard(c, d), naiveJaccard(c, d))
  })

  it("treats a similarity of exactly 0.8 as a duplicate", () => {
    const [a, b] = pair(900, 100)
    const index = Novelty.make()
    index.insert(doc("s1", a))
    const verdict = index.insert(doc("s2", b))
    assert.deepStrictEqual(verdict, { _tag: "Duplicate", reason: "content", of: "s1", similarity: 0.8 })
  })

  it("keeps a text just under 0.8 similar, tagged as a duplicate for novelty", () => {
    const [a, b] = pair(900, 101)
    const index = Novelty.make()
    index.insert(doc("s1", a))
    const verdict = index.insert(doc("s2", b))
    assert.strictEqual(verdict._tag, "Unique")
    assert.isBelow(verdict.similarity, 0.8)
    assert.isAbove(verdict.similarity, 0.79)
    if (verdict._tag === "Unique") {
      assert.strictEqual(verdict.novelty, "duplicate")
      assert.strictEqual(verdict.nearest, "s1")
    }
    assert.strictEqual(index.size(), 2)
  })

  it("tags 0.7 as duplicate and just under as related", () => {
    const [a, b] = pair(170, 30)
    const [, c] = pair(170, 31)
    assert.strictEqual(Novelty.jaccard(a, b), 0.7)
    const index = Novelty.make()
    index.add(doc("s1", a))
    assert.deepStrictEqual(index.check(doc("x", b)), {
      _tag: "Unique",
      novelty: "duplicate",
      similarity: 0.7,
      nearest: "s1"
    })
    const under = index.check(doc("y", c))
    assert.strictEqual(under._tag === "Unique" ? under.novelty : under._tag, "related")
    assert.isBelow(under.similarity, 0.7)
  })

  it("tags 0.3 as related and just under as new", () => {
    const [a, b] = pair(130, 70)
    const [, c] = pair(130, 71)
    assert.strictEqual(Novelty.jaccard(a, b), 0.3)
    const index = Novelty.make()
    index.add(doc("s1", a))
    assert.deepStrictEqual(index.check(doc("x", b)), {
      _tag: "Unique",
      novelty: "related",
      similarity: 0.3,
      nearest: "s1"
    })
    const under = index.check(doc("y", c))
    assert.strictEqual(under._tag === "Unique" ? under.novelty : under._tag, "new")
    assert.isBelow(under.similarity, 0.3)
  })

  it("compares texts whose length ratio is exactly 0.3 and skips those just under", () => {
    const long = letters.slice(0, 1000)
    assert.isAbove(Novelty.similarity(long, long.slice(0, 300)), 0)
    assert.strictEqual(Novelty.similarity(long, long.slice(0, 299)), 0)
    const index = Novelty.make()
    index.add(doc("s1", long))
    assert.isAbove(index.check(doc("x", long.slice(0, 300))).similarity, 0)
    assert.strictEqual(index.check(doc("y", long.slice(0, 299))).similarity, 0)
  })

  it("matches titles only when longer than 20 characters after normalisation", () => {
    const longer = "Solar Cell Records, Now!" // normalised "solar cell records now": 22 characters
    assert.strictEqual(Novelty.normalizeTitle("abcdefghij klmnopqrs!").length, 20)
    assert.strictEqual(Novelty.normalizeTitle("abcdefghij klmnopqrst").length, 21)
    const index = Novelty.make()
    index.add(doc("s1", letters.slice(0, 400), "https://a.example/1", "abcdefghij klmnopqrs!"))
    index.add(doc("s2", letters.slice(1000, 1400), "https://a.example/2", "abcdefghij klmnopqrst"))
    index.add(doc("s3", letters.slice(2000, 2400), "https://a.example/3", longer))
    assert.strictEqual(
      index.check(doc("x", letters.slice(3000, 3400), "https://b.example/1", "ABCDEFGHIJ klmnopqrs"))._tag,
      "Unique"
    )
    assert.deepStrictEqual(
      index.check(doc("y", letters.slice(4000, 4400), "https://b.example/2", "abcdefghij, klmnopqrst")),
      {
        _tag: "Duplicate",
        reason: "title",
        of: "s2",
        similarity: 1
      }
    )
    assert.strictEqual(
      index.check(doc("w", letters.slice(6000, 6400), "https://b.example/4", longer))._tag,
      "Duplicate"
    )
  })

  it("normalises URLs: scheme, www, case of the host, default port, fragment, tracking parameters, slash", () => {
    const base = Novelty.normalizeUrl("https://example.com/Path/page?b=2&a=1")
    for (const variant of [
      "http://www.example.com/Path/page?a=1&b=2",
      "https://EXAMPLE.com:443/Path/page/?a=1&b=2#section",
      "https://example.com/Path/page?utm_source=x&a=1&b=2&fbclid=abc",
      "  https://example.com/Path//page?a=1&b=2  "
    ]) {
      assert.strictEqual(Novelty.normalizeUrl(variant), base, variant)
    }
    assert.notStrictEqual(Novelty.normalizeUrl("https://example.com/path/page?a=1&b=2"), base)
    assert.notStrictEqual(Novelty.normalizeUrl("https://example.com/Path/page?a=1&b=3"), base)
  })

  it("keeps the fragment of file URLs, which names a chunk of a local document", () => {
    assert.notStrictEqual(
      Novelty.normalizeUrl("file:///docs/a.md#chunk-1"),
      Novelty.normalizeUrl("file:///docs/a.md#chunk-2")
    )
    assert.strictEqual(
      Novelty.normalizeUrl("file:///docs/a.md#chunk-1"),
      Novelty.normalizeUrl("file:///docs/a.md/#chunk-1")
    )
  })

  it("finds the same page by URL before comparing anything else", () => {
    const index = Novelty.make()
    index.add(doc("s1", letters.slice(0, 500), "https://www.example.com/a/"))
    assert.deepStrictEqual(index.check(doc("x", letters.slice(9000, 9100), "http://example.com/a#top", "other")), {
      _tag: "Duplicate",
      reason: "url",
      of: "s1",
      similarity: 1
    })
  })

  it("ignores case, whitespace and copyright lines when comparing texts", () => {
    const text = letters.slice(0, 600)
    const noisy = `  ${text.slice(0, 300).toUpperCase()}\n\n  ${text.slice(300)}  Copyright 2024 Example Corp. All rights reserved.`
    assert.strictEqual(Novelty.normalizeText(noisy), `${text.slice(0, 300)} ${text.slice(300)}`)
  })

  it("finds near-copies through the bands once the index is too large to scan", () => {
    const index = Novelty.make()
    for (let i = 0; i < 700; i++) index.add(doc(`s${i}`, letters.slice(i * 25, i * 25 + 400) + ` document ${i}`))
    assert.strictEqual(index.size(), 700)
    const original = letters.slice(300 * 25, 300 * 25 + 400) + " document 300"
    const verdict = index.insert(doc("copy", `${original} with a few extra words`, "https://copies.example/300"))
    assert.strictEqual(verdict._tag, "Duplicate")
    if (verdict._tag === "Duplicate") {
      assert.strictEqual(verdict.reason, "content")
      assert.strictEqual(verdict.of, "s300")
    }
  })

  it("tags an unrelated text as new, with no nearest document", () => {
    const index = Novelty.make()
    index.add(doc("s1", letters.slice(0, 500)))
    assert.deepStrictEqual(index.check(doc("x", letters.slice(10_000, 10_500))), {
      _tag: "Unique",
      novelty: "new",
      similarity: 0,
      nearest: undefined
    })
  })

  it("adds only unique documents on insert", () => {
    const [a, b] = pair(900, 10)
    const index = Novelty.make()
    assert.strictEqual(index.insert(doc("s1", a))._tag, "Unique")
    assert.strictEqual(index.insert(doc("s2", b))._tag, "Duplicate")
    assert.strictEqual(index.size(), 1)
  })

  it("takes its thresholds from a research configuration", () => {
    const options = Novelty.optionsFromConfig(
      Schema.decodeSync(ResearchConfig.ResearchConfig)({
        titleDedupMinLength: 30,
        contentDuplicateThreshold: 0.9,
        contentLengthRatioFloor: 0.5,
        noveltyDuplicate: 0.75,
        noveltyRelated: 0.25
      })
    )
    assert.deepStrictEqual(options, {
      titleMinLength: 30,
      duplicateThreshold: 0.9,
      lengthRatioFloor: 0.5,
      noveltyDuplicate: 0.75,
      noveltyRelated: 0.25
    })
    const [a, b] = pair(900, 100)
    const index = Novelty.make(options)
    index.add(doc("s1", a))
    assert.strictEqual(index.check(doc("x", b))._tag, "Unique")
  })
})
