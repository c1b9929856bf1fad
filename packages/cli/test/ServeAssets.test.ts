import { Research, Source } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import * as childProcess from "node:child_process"
import * as ReportHtml from "../src/http/ReportHtml.js"

describe("deep-research serve: the web page's files", () => {
  it("the committed bundle is what its sources build to", async () => {
    const build = new URL("../web/build.mjs", import.meta.url).pathname
    const failed = await new Promise<string | undefined>((resolve) =>
      childProcess.execFile(process.execPath, [build, "--check"], (error, _stdout, stderr) =>
        resolve(error === null ? undefined : `${error.message}\n${stderr}`)
      )
    )
    assert.isUndefined(failed)
  })
})

describe("deep-research serve: reports as HTML", () => {
  const report = (markdown: string, urls: ReadonlyArray<string> = ["https://example.org/a"]) =>
    new Research.Report({
      title: "T",
      markdown,
      citations: urls.map(
        (url, i) => new Research.Citation({ number: i + 1, sourceId: `s${i}`, url, title: `Source ${i + 1}` })
      ),
      language: "en",
      droppedCitations: 0
    })

  it("citations link to their entries of the source list, which is rebuilt from the report's citations", () => {
    const html = ReportHtml.fragment(
      report("# Title\n\nA claim [1], two [1, 2] and a stray [7].\n\n## Sources\n\n1. [Model's own](https://x.test)", [
        "https://example.org/a",
        "https://example.org/b"
      ])
    )
    assert.include(html, `[<a class="cite" href="#source-1">1</a>]`)
    assert.include(html, `[<a class="cite" href="#source-1">1</a>, <a class="cite" href="#source-2">2</a>]`)
    assert.include(html, "a stray [7].")
    assert.include(html, `<li id="source-2" value="2"><a href="https://example.org/b"`)
    assert.notInclude(html, "Model's own")
  })

  it("a scholarly source's entry names its authors, year and venue, and a preprint is marked", () => {
    const work = new Source.Work({
      authors: ["Ada Moreau", "Kenji <Sato>"],
      year: 2024,
      venue: "arXiv (cs.CL)",
      preprint: true
    })
    const cited = report("A claim [1].")
    const html = ReportHtml.fragment(
      new Research.Report({ ...cited, citations: cited.citations.map((c) => new Research.Citation({ ...c, work })) })
    )
    assert.include(html, `<span class="work">— Ada Moreau, Kenji &lt;Sato&gt; (2024), arXiv (cs.CL), preprint</span>`)
  })

  it("report text is escaped and only http(s) links become links", () => {
    const html = ReportHtml.fragment(
      report(`<script>alert(1)</script> [x](javascript:alert(1)) [ok](https://example.org/?a=1&b=2) "q"`)
    )
    assert.notInclude(html, "<script>")
    assert.include(html, "&lt;script&gt;")
    assert.notInclude(html, "javascript:")
    assert.include(html, `<a href="https://example.org/?a=1&amp;b=2" rel="noopener noreferrer">ok</a>`)
  })

  it("the citation check's closing line follows the rebuilt source list, and its marks show as marks", () => {
    const checked = ReportHtml.fragment(
      report(
        "A claim [1]. A weak one [1] *(not supported by the cited sources)*.\n\n## Sources\n\n" +
          "1. [A](https://example.org/a)\n\n*Citation check: 2 of 2 cited sentences were checked against their sources; 1 was changed.*\n"
      )
    )
    assert.include(checked, `<mark class="unsupported">(not supported by the cited sources)</mark>`)
    assert.match(checked, /<\/section>\n<p class="check"><em>Citation check: 2 of 2 cited sentences were checked/)
    const unchecked = ReportHtml.page(
      report(
        "A claim [1].\n\n## Sources\n\n1. [A](https://example.org/a)\n\n" +
          "*Citation check: off for this report; the citations were not checked against their sources.*\n"
      )
    )
    assert.include(
      unchecked,
      `<p class="check"><em>Citation check: off for this report; the citations were not checked`
    )
    assert.isUndefined(ReportHtml.closingLine("A claim [1].\n\n## Sources\n\n1. [A](https://example.org/a)\n"))
  })

  it("tables, lists, quotes and code come out as their elements", () => {
    const html = ReportHtml.fragment(
      report("| A | B |\n|---|---|\n| 1 | **2** |\n\n- one\n- two\n\n3. three\n\n> quoted\n\n```\n<code>\n```")
    )
    assert.include(
      html,
      "<thead><tr><th>A</th><th>B</th></tr></thead><tbody><tr><td>1</td><td><strong>2</strong></td></tr>"
    )
    assert.include(html, "<ul><li>one</li><li>two</li></ul>")
    assert.include(html, `<ol start="3"><li>three</li></ol>`)
    assert.include(html, "<blockquote><p>quoted</p></blockquote>")
    assert.include(html, "<pre><code>&lt;code&gt;</code></pre>")
  })
})
