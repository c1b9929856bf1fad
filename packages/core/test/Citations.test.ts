import { assert, describe, it } from "@effect/vitest"
import * as Citations from "../src/Citations.js"
import { Source, Work } from "../src/Source.js"

const source = (n: number) =>
  new Source({
    id: `r1-d1-s${n}`,
    url: `https://example.org/page-${n}`,
    title: `Page ${n}`,
    content: `content ${n}`,
    provider: "static",
    quality: "medium",
    retrievedAt: 0,
    rawLength: 100
  })

const sources = [1, 2, 3, 4, 5].map(source)
const known = (n: number) => n >= 1 && n <= 5

describe("Citations", () => {
  it("renumbers citations 1..N in order of first appearance", () => {
    const result = Citations.renumber("Alpha [4]. Beta [2]. Gamma [4] and [5].", known)
    assert.strictEqual(result.markdown, "Alpha [1]. Beta [2]. Gamma [1] and [3].")
    assert.deepStrictEqual(result.order, [4, 2, 5])
    assert.strictEqual(result.dropped, 0)
  })

  it("handles [1, 2], [1][2] and [1-3] groups", () => {
    const result = Citations.renumber("A [3, 5]. B [5][2]. C [2-4]. D [1] [3].", known)
    assert.strictEqual(result.markdown, "A [1, 2]. B [2, 3]. C [1, 3, 4]. D [1, 5].")
    assert.deepStrictEqual(result.order, [3, 5, 2, 4, 1])
  })

  it("removes citations pointing at no source and counts them", () => {
    const result = Citations.renumber("Known [2]. Invented [9]. Mixed [2, 12]. Range [4-7].", known)
    assert.strictEqual(result.markdown, "Known [1]. Invented. Mixed [1]. Range [2, 3].")
    // 9, 12, 6 and 7 point nowhere.
    assert.strictEqual(result.dropped, 4)
  })

  it("leaves links, reference links and footnotes alone", () => {
    const text = "See [1](https://a.example) and [docs][2] and a note[^3]. Cited [3]."
    const result = Citations.renumber(text, known)
    assert.strictEqual(result.markdown, "See [1](https://a.example) and [docs][2] and a note[^3]. Cited [1].")
    assert.deepStrictEqual(result.order, [3])
  })

  it("leaves code blocks and inline code alone", () => {
    const text = "Use `items[2]` here [4].\n\n```python\nx = rows[1]\ny = rows[9]\n```\n\nThen [2]."
    const result = Citations.renumber(text, known)
    assert.strictEqual(
      result.markdown,
      "Use `items[2]` here [1].\n\n```python\nx = rows[1]\ny = rows[9]\n```\n\nThen [2]."
    )
    assert.deepStrictEqual(result.order, [4, 2])
    assert.strictEqual(result.dropped, 0)
  })

  it("accepts full-width brackets and CJK separators", () => {
    const result = Citations.renumber("研究表明【2】，另见[3，4]。", known)
    assert.strictEqual(result.markdown, "研究表明[1]，另见[2, 3]。")
  })

  it("strips the model's own source list and builds the list from the session's sources", () => {
    const report = [
      "# Title",
      "",
      "A claim [3]. Another [1] and an invented one [7].",
      "",
      "## References",
      "",
      "1. [Made up](https://invented.example)",
      "3. Something"
    ].join("\n")
    const finalized = Citations.finalize(report, sources, "Sources")
    assert.notInclude(finalized.markdown, "invented.example")
    assert.notInclude(finalized.markdown, "## References")
    assert.include(finalized.markdown, "A claim [1]. Another [2] and an invented one.")
    assert.include(
      finalized.markdown,
      "## Sources\n\n1. [Page 3](https://example.org/page-3)\n2. [Page 1](https://example.org/page-1)"
    )
    assert.deepStrictEqual(
      finalized.citations.map((c) => [c.number, c.sourceId]),
      [
        [1, "r1-d1-s3"],
        [2, "r1-d1-s1"]
      ]
    )
    assert.strictEqual(finalized.dropped, 1)
  })

  it("names a scholarly source's authors, year and venue in the source list, and marks a preprint", () => {
    const work = new Work({
      authors: ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar", "Jakob Uszkoreit"],
      year: 2017,
      venue: "arXiv (cs.CL)",
      preprint: true
    })
    const paper = new Source({ ...source(6), title: "Attention Is All You Need", work })
    const finalized = Citations.finalize("A claim [2], another [1].", [source(1), paper], "Sources")
    assert.include(
      finalized.markdown,
      "1. [Attention Is All You Need](https://example.org/page-6) — Ashish Vaswani, Noam Shazeer, Niki Parmar et al. " +
        "(2017), arXiv (cs.CL), preprint\n2. [Page 1](https://example.org/page-1)\n"
    )
    assert.deepStrictEqual(finalized.citations[0]?.work, work)
    assert.isUndefined(finalized.citations[1]?.work)
  })

  it("keeps a last section that is not a source list", () => {
    const text = "# T\n\nBody [1].\n\n## Conclusion\n\nDone [2]."
    assert.strictEqual(Citations.stripSourceList(text), text)
  })

  it("remap rewrites numbers through a mapping and drops the unmapped", () => {
    const result = Citations.remap("X [1]. Y [2, 3]. Z [4].", (n) => (n === 4 ? undefined : n + 10))
    assert.strictEqual(result.markdown, "X [11]. Y [12, 13]. Z.")
    assert.strictEqual(result.dropped, 1)
  })
})
