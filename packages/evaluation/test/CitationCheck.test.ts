import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import { CitationCheck } from "../src/index.js"
import { session, source } from "./fixtures.js"

const gold = source(
  "d1-s1",
  "https://www.example.com/gold/?utm_source=news",
  "Gold and real interest rates",
  "Analysts at the bank wrote that “gold tends to fall when real interest rates rise sharply over a year” in 2023."
)
const dollar = source("d1-s2", "https://example.org/dollar", "The dollar and gold", "A strong dollar weighs on gold.")
const sources = [gold, dollar]

const clean = [
  "# Gold", // 1
  "", // 2
  "Gold falls as real rates rise [1]. A strong dollar weighs on it [2].", // 3
  "", // 4
  "## Sources", // 5
  "[1] Gold and real interest rates: https://example.com/gold", // 6
  "[2] The dollar and gold - https://example.org/dollar" // 7
].join("\n")

describe("CitationCheck", () => {
  it("finds nothing wrong in a clean report", () => {
    const report = CitationCheck.check({ markdown: clean, sources })
    assert.strictEqual(report.issueCount, 0)
    assert.strictEqual(report.inlineCitations, 2)
    assert.strictEqual(report.citedSources, 2)
    assert.strictEqual(report.listedSources, 2)
    assert.strictEqual(report.retrievedSources, 2)
  })

  it("reports citations that point nowhere with their line", () => {
    const markdown = clean.replace("weighs on it [2].", "weighs on it [2][5]. See also [3-4].")
    const report = CitationCheck.check({ markdown, sources })
    assert.strictEqual(report.counts.danglingCitations, 3)
    assert.deepStrictEqual(
      report.danglingCitations.map((f) => [f.line, f.detail]),
      [
        [3, "[5] is not in the source list"],
        [3, "[3] is not in the source list"],
        [3, "[4] is not in the source list"]
      ]
    )
    assert.include(report.danglingCitations[0]?.text ?? "", "weighs on it")
  })

  it("reports sources that are never cited", () => {
    const markdown = clean.replace(" A strong dollar weighs on it [2].", "")
    const report = CitationCheck.check({ markdown, sources })
    assert.strictEqual(report.counts.uncitedSources, 1)
    assert.strictEqual(report.uncitedSources[0]?.line, 7)
    assert.strictEqual(report.uncitedSources[0]?.detail, "source 2 is never cited")
  })

  it("reports duplicate sources by normalised URL and by title", () => {
    const markdown = [
      clean,
      "[3] Gold, again: http://www.example.com/gold/#top",
      "[4] THE DOLLAR AND GOLD!! (copy): https://other.net/copy",
      "[5] Gold and Real Interest Rates — https://mirror.net/gold"
    ].join("\n")
    const report = CitationCheck.check({ markdown: markdown + "\nCites [3][4][5].", sources })
    assert.deepStrictEqual(
      report.duplicateSources.map((f) => [f.line, f.detail]),
      [
        [8, "source 3 has the same URL as source 1"],
        [10, "source 5 has the same title as source 1"]
      ]
    )
  })

  it("does not compare short titles", () => {
    const markdown = "A [1] B [2]\n\n## References\n1. Home: https://a.com/x\n2. Home: https://b.com/y"
    const report = CitationCheck.check({ markdown, sources: [] })
    assert.strictEqual(report.counts.duplicateSources, 0)
  })

  it("reports listed URLs the session never retrieved, and entries without a URL", () => {
    const markdown =
      clean + "\n[3] LinkedIn post: https://linkedin.com/posts/123\n[4] A book without a link\nMore [3][4]."
    const report = CitationCheck.check({ markdown, sources })
    assert.deepStrictEqual(
      report.unretrievedSources.map((f) => [f.line, f.detail]),
      [
        [8, "https://linkedin.com/posts/123 was never retrieved in this session"],
        [9, "source 4 has no URL"]
      ]
    )
  })

  it("reports links in the body that the session never retrieved", () => {
    const markdown = clean.replace(
      "weighs on it [2].",
      "weighs on it [2], see https://example.org/dollar and [this](https://fake.io/x)."
    )
    const report = CitationCheck.check({ markdown, sources })
    assert.deepStrictEqual(
      report.unretrievedSources.map((f) => [f.line, f.detail]),
      [[3, "inline link https://fake.io/x was never retrieved in this session"]]
    )
  })

  it("takes a citation just before a quote as the quote's citation", () => {
    const markdown = clean.replace(
      "# Gold",
      '# Gold\n\nAs [2] put it, "central banks bought more gold in 2023 than in any year before".'
    )
    const report = CitationCheck.check({ markdown, sources })
    assert.strictEqual(report.quotesChecked, 1)
    assert.include(report.unsupportedQuotes[0]?.detail ?? "", "does not occur in [2]")
  })

  it("checks a quoted passage against the text of the source it cites", () => {
    const supported = "The bank said “gold tends to fall when real interest rates rise sharply over a year” [1]."
    const invented = 'It added that "gold will double within the next five years according to our models" [1].'
    const markdown = clean.replace("# Gold", `# Gold\n\n${supported}\n${invented}`)
    const report = CitationCheck.check({ markdown, sources })
    assert.strictEqual(report.quotesChecked, 2)
    assert.strictEqual(report.counts.unsupportedQuotes, 1)
    assert.strictEqual(report.unsupportedQuotes[0]?.line, 4)
    assert.include(report.unsupportedQuotes[0]?.detail ?? "", "does not occur in [1]")
  })

  it("matches quotes regardless of case, whitespace, quote style and ellipses", () => {
    const quote = '"Gold  tends to FALL when real interest rates … over a year" [1]'
    const markdown = clean.replace("# Gold", `# Gold\n\nAs noted, ${quote}.`)
    const report = CitationCheck.check({ markdown, sources })
    assert.strictEqual(report.quotesChecked, 1)
    assert.strictEqual(report.counts.unsupportedQuotes, 0)
  })

  it("flags a quote whose cited source was never retrieved", () => {
    const markdown = clean.replace(
      "# Gold",
      '# Gold\n\n"central banks bought more gold in 2023 than in any year before" [9].'
    )
    const report = CitationCheck.check({ markdown, sources })
    assert.strictEqual(report.counts.unsupportedQuotes, 1)
    assert.include(report.unsupportedQuotes[0]?.detail ?? "", "no retrieved source matches")
  })

  it("leaves short quotes and quotes without a citation alone", () => {
    const markdown = clean.replace(
      "# Gold",
      '# Gold\n\nA "safe haven" [1]. "a long quote with no citation next to it at all here".'
    )
    const report = CitationCheck.check({ markdown, sources })
    assert.strictEqual(report.quotesChecked, 0)
  })

  it("finds the source list under a longer heading, but not under one that only mentions sources", () => {
    const listed = clean.replace("## Sources", "## References and further reading")
    assert.strictEqual(CitationCheck.check({ markdown: listed, sources }).issueCount, 0)
    const notAList = "Claim [1].\n\n## Sourcesless claims\n1. https://example.com/gold"
    assert.strictEqual(CitationCheck.check({ markdown: notAList, sources }).listedSources, 0)
    const aList = "Claim [1].\n\n## Sources (numbered)\n1. https://example.com/gold"
    assert.strictEqual(CitationCheck.check({ markdown: aList, sources }).listedSources, 1)
  })

  it("ignores citations in code and reads footnote-style lists without a heading", () => {
    const markdown = [
      "Gold rises [1].",
      "```",
      "array[7] = 1",
      "```",
      "[1]: https://example.com/gold Gold and real interest rates"
    ].join("\n")
    const report = CitationCheck.check({ markdown, sources })
    assert.strictEqual(report.issueCount, 0)
    assert.strictEqual(report.listedSources, 1)
  })

  it("reads CJK citations and markdown-link source entries", () => {
    const markdown = "黄金价格上涨【1】。\n\n## 参考文献\n1. [Gold and real interest rates](https://example.com/gold)"
    const report = CitationCheck.check({ markdown, sources })
    assert.strictEqual(report.issueCount, 0)
    assert.strictEqual(report.citedSources, 1)
  })

  it("reads local corpus sources: each file: chunk is its own retrieved source", () => {
    const chunk1 = source(
      "d1-s1",
      "file:///corpus/gold.md#chunk-1",
      "gold.md (part 1)",
      "Gold held its value through the inflation of the nineteen seventies."
    )
    const chunk2 = source(
      "d1-s2",
      "file:///corpus/gold.md#chunk-2",
      "gold.md (part 2)",
      "Central banks bought more gold in 2022 than in any year since records began."
    )
    // As core's synthesis writes the source list: markdown links to the sources' URLs.
    const markdown = [
      "Gold kept its value in the 1970s [1].",
      'Banks said they "bought more gold in 2022 than in any year since records began" [2].',
      "",
      "## Sources",
      "1. [gold.md (part 1)](file:///corpus/gold.md#chunk-1)",
      "2. [gold.md (part 2)](file:///corpus/gold.md#chunk-2)"
    ].join("\n")
    const report = CitationCheck.check({ markdown, sources: [chunk1, chunk2] })
    assert.deepStrictEqual(
      [...report.unretrievedSources, ...report.duplicateSources, ...report.unsupportedQuotes].map((f) => f.detail),
      []
    )
    assert.strictEqual(report.quotesChecked, 1)
    assert.strictEqual(report.issueCount, 0)
  })

  it("matches a source whose URL has parentheses, which the source list escapes", () => {
    const wiki = source("d1-s3", "https://en.wikipedia.org/wiki/Gold_(color)", "Gold (color)", "Gold is a yellow hue.")
    // Core's source list writes ")" as "%29" so the markdown link does not end early.
    const markdown = "Gold is a hue [1].\n\n## Sources\n1. [Gold (color)](https://en.wikipedia.org/wiki/Gold_(color%29)"
    const report = CitationCheck.check({ markdown, sources: [wiki] })
    assert.deepStrictEqual(
      report.unretrievedSources.map((f) => f.detail),
      []
    )
  })

  it("finds the source list under the heading core writes in the report's language", () => {
    const headings = ["Quellen", "Fuentes", "Fontes", "Fonti", "Bronnen", "Источники", "Джерела", "Πηγές", "מקורות"]
    for (const heading of [...headings, "المصادر", "स्रोत", "แหล่งที่มา", "出典", "출처", "参考来源"]) {
      const markdown = `Gold steigt [1].\n\n## ${heading}\n1. [Gold and real interest rates](https://example.com/gold)`
      const report = CitationCheck.check({ markdown, sources })
      assert.deepStrictEqual([heading, report.listedSources, report.issueCount], [heading, 1, 0])
    }
  })

  it("checks a session's report and encodes for storage", () => {
    const report = CitationCheck.checkSession(session({ markdown: clean.replace("[2].", "[7]."), sources }))
    assert.strictEqual(report.counts.danglingCitations, 1)
    assert.strictEqual(report.counts.uncitedSources, 1)
    const json = Schema.encodeSync(Schema.parseJson(CitationCheck.CitationReport))(report)
    assert.deepStrictEqual(Schema.decodeUnknownSync(Schema.parseJson(CitationCheck.CitationReport))(json), report)
  })
})
