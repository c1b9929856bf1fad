import { assert, describe, it } from "@effect/vitest"
import { Session, Source } from "@deep-research/core"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { unzipSync, strFromU8 } from "fflate"
import * as ReportDocument from "../src/export/ReportDocument.js"
import * as ReportExport from "../src/export/ReportExport.js"
import * as ReportPdf from "../src/export/ReportPdf.js"
import * as Sessions from "./support/exportSessions.js"
import { pdfText } from "./support/pdfText.js"

const text = (body: Uint8Array) => new TextDecoder().decode(body)

const exported = (session: Parameters<typeof ReportExport.render>[0], format: ReportExport.Format) =>
  Effect.map(ReportExport.render(session, format), (e) => e.body)

const validator = () => {
  const ajv = new Ajv2020({ allErrors: true, strict: true })
  ajv.addFormat("date-time", (value: string) => !Number.isNaN(Date.parse(value)))
  return ajv.compile(JSON.parse(ReportExport.jsonSchema()))
}

const docxParts = (body: Uint8Array) => {
  const files = unzipSync(body)
  const part = (name: string) => strFromU8(files[name] ?? new Uint8Array())
  return {
    document: part("word/document.xml"),
    relations: part("word/_rels/document.xml.rels"),
    styles: part("word/styles.xml")
  }
}

describe("report exports", () => {
  it.effect("Markdown: each citation links to its source's anchor; marks and the check's line stay", () =>
    Effect.gen(function* () {
      const md = text(yield* exported(Sessions.english, "md"))
      assert.include(md, "savings of 30% [[1](#source-1), [2](#source-2)].")
      assert.include(md, '1. <a id="source-1"></a>[Cold climate heat pump field study](https://example.org/study)')
      assert.include(md, "— Ada Author, Ben Author (2021), Energy Journal")
      assert.include(md, "at all. *(not supported by the cited sources)*")
      assert.match(
        md,
        /\n\*Citation check: 4 of 4 cited sentences were checked against their sources; 1 was changed\.\*\n$/
      )
      assert.strictEqual(md.match(/## Sources/g)?.length, 1)
    })
  )

  it.effect("HTML: citations link to the list, the mark is a mark, the check's line ends the page", () =>
    Effect.gen(function* () {
      const html = text(yield* exported(Sessions.english, "html"))
      assert.include(html, '<a class="cite" href="#source-2">2</a>')
      assert.include(html, '<li id="source-2" value="2"><a href="https://example.org/maine?a=1&amp;b=2"')
      assert.include(html, '<mark class="unsupported">(not supported by the cited sources)</mark>')
      assert.include(html, '<p class="check"><em>Citation check: 4 of 4 cited sentences')
    })
  )

  it.effect("JSON: sentences carry their citations, the sources and the check's verdicts, and validate", () =>
    Effect.gen(function* () {
      const json: unknown = JSON.parse(text(yield* exported(Sessions.english, "json")))
      const validate = validator()
      assert.isTrue(validate(json), JSON.stringify(validate.errors))
      assert.strictEqual(Reflect.get(Object(json), "$schema"), ReportExport.jsonSchemaId)
      const exportedReport = Object(json)
      const findings = exportedReport.sections.find((s: { heading: string }) => s.heading === "Findings")
      const [first, second, third] = findings.blocks[0].sentences
      assert.deepStrictEqual(first.citations[0], {
        number: 1,
        title: "Cold climate heat pump field study",
        url: "https://example.org/study",
        support: "supported"
      })
      // The check labelled [1] and [3] of the report before it; [3] became [2] when the vendor's [2] was removed.
      assert.deepStrictEqual(
        second.citations.map((c: { number: number; support: string }) => [c.number, c.support]),
        [
          [1, "partially_supported"],
          [2, "supported"]
        ]
      )
      assert.strictEqual(third.text, "Some vendors claim no loss of capacity at all.")
      assert.isTrue(third.marked)
      assert.deepStrictEqual(third.check, {
        status: "checked",
        label: "unsupported",
        marked: true,
        removedCitations: 1,
        explanation: "unsupported by the sources"
      })
      assert.deepStrictEqual(exportedReport.sources[0], {
        number: 1,
        title: "Cold climate heat pump field study",
        url: "https://example.org/study",
        authors: ["Ada Author", "Ben Author"],
        year: 2021,
        venue: "Energy Journal",
        doi: null,
        preprint: false,
        publishedDate: "2021-03-01",
        provider: "openalex"
      })
      assert.strictEqual(exportedReport.check.status, "checked")
      assert.strictEqual(exportedReport.check.counts.marked, 1)
      assert.match(exportedReport.check.line, /^Citation check: 4 of 4/)
    })
  )

  it.effect("JSON: a source with a publication date but no bibliographic record gives that date's year", () =>
    Effect.gen(function* () {
      const dated = new Session.Session({
        ...Sessions.english,
        sources: Sessions.english.sources.map((s) =>
          s.id === "s-maine" ? new Source.Source({ ...s, publishedDate: "2023-05-02" }) : s
        )
      })
      const json = JSON.parse(text(yield* exported(dated, "json")))
      assert.isTrue(validator()(json))
      assert.deepInclude(json.sources[1], { number: 2, year: 2023, publishedDate: "2023-05-02", authors: [] })
      // A work's own year stands before its page's date.
      assert.strictEqual(json.sources[0].year, 2021)
    })
  )

  it.effect("JSON of a report whose check was off says so, and validates", () =>
    Effect.gen(function* () {
      const json = JSON.parse(text(yield* exported(Sessions.unchecked, "json")))
      assert.isTrue(validator()(json))
      assert.strictEqual(json.check.status, "off")
      assert.isNull(json.check.counts)
      assert.match(json.check.line, /^Citation check: off for this report/)
      assert.isNull(json.sections[0].blocks[0].sentences[0].check)
    })
  )

  it.effect("JSON Schema rejects an export missing a sentence's verdict field (the validator is real)", () =>
    Effect.gen(function* () {
      const json = JSON.parse(text(yield* exported(Sessions.english, "json")))
      delete json.sections[1].blocks[0].sentences[0].check
      assert.isFalse(validator()(json))
    })
  )

  it.effect("PDF: the text reads back, citations go to named destinations and sources to their URLs", () =>
    Effect.gen(function* () {
      const document = ReportDocument.fromSession(Sessions.english)
      assert.isDefined(document)
      if (document === undefined) return
      const pdf = yield* ReportPdf.render(document, "Sources", { compress: false })
      const raw = Buffer.from(pdf).toString("latin1")
      assert.match(raw, /^%PDF-1\.\d/)
      const lines = pdfText(pdf).join("\n")
      assert.include(lines, "Cold-climate heat pumps keep a COP above 2 at -15 °C")
      assert.include(lines, "(not")
      assert.include(lines, "Citation check: 4 of 4 cited sentences were checked against their sources; 1 was changed.")
      for (const n of [1, 2]) {
        assert.include(raw, `/S /GoTo\n/D (source-${n})`)
        assert.match(raw, new RegExp(`\\(source-${n}\\) \\[\\d+ 0 R /XYZ`))
      }
      assert.include(raw, "/URI (https://example.org/study)")
      assert.include(raw, "/URI (https://www.energy.gov/heat-pumps)")
      assert.include(raw, "DejaVuSans")
      // The default export is compressed and whole.
      const compressed = yield* exported(Sessions.english, "pdf")
      assert.match(Buffer.from(compressed).toString("latin1"), /%%EOF\s*$/)
    })
  )

  it.effect("PDF of a Russian report shows its Cyrillic text", () =>
    Effect.gen(function* () {
      const document = ReportDocument.fromSession(Sessions.russian)
      if (document === undefined) return assert.fail("no document")
      assert.isUndefined(ReportPdf.refusal(document, "Источники"))
      const lines = pdfText(yield* ReportPdf.render(document, "Источники", { compress: false })).join("\n")
      assert.include(lines, "Тепловые насосы сохраняют эффективность при морозе.")
      assert.include(lines, "Источники")
      assert.include(lines, "Проверка ссылок: 1 из 1")
    })
  )

  it.effect("PDF of a report with a symbol its font lacks shows it as U+FFFD rather than refusing the report", () =>
    Effect.gen(function* () {
      const document = ReportDocument.fromSession(Sessions.english)
      if (document === undefined) return assert.fail("no document")
      const withEmoji = {
        ...document,
        blocks: [
          ...document.blocks,
          { _tag: "Paragraph" as const, inline: ReportDocument.inline("Warm 🔥 homes.", new Set()) }
        ]
      }
      assert.isUndefined(ReportPdf.refusal(withEmoji, "Sources"))
      const lines = pdfText(yield* ReportPdf.render(withEmoji, "Sources", { compress: false }))
      assert.include(lines, "Warm \uFFFD homes.")
    })
  )

  it.effect("PDF of an Arabic or a Chinese report is refused in one sentence that says why", () =>
    Effect.gen(function* () {
      const arabic = yield* Effect.either(exported(Sessions.arabic, "pdf"))
      const chinese = yield* Effect.either(exported(Sessions.chinese, "pdf"))
      assert.isTrue(Either.isLeft(arabic) && Either.isLeft(chinese))
      if (Either.isRight(arabic) || Either.isRight(chinese)) return
      assert.match(
        arabic.left.message,
        /^A PDF cannot be made of this report: it holds text in Arabic script, which runs right to left/
      )
      assert.match(chinese.left.message, /has no glyphs for Chinese, Japanese and Korean characters \(such as /)
      for (const message of [arabic.left.message, chinese.left.message]) {
        assert.include(message, "export it as docx or html")
        // One sentence: one line, one full stop, at its end.
        assert.match(message, /^[^\n.]+\.$/)
      }
    })
  )

  it.effect("DOCX: citations are internal links to bookmarked sources, sources link out, the mark is shaded", () =>
    Effect.gen(function* () {
      const { document, relations } = docxParts(yield* exported(Sessions.english, "docx"))
      assert.match(document, /<w:hyperlink [^>]*w:anchor="source-2"[^>]*>.*?<w:t[^>]*>2<\/w:t>/)
      assert.match(document, /<w:bookmarkStart w:name="source-1" w:id="\d+"\/>/)
      assert.include(document, "Some vendors claim no loss of capacity at all.")
      assert.match(
        document,
        /<w:shd [^>]*w:fill="FFE0E0"[^>]*\/>.*?<w:t[^>]*>\(not supported by the cited sources\)<\/w:t>/
      )
      assert.include(
        document,
        "Citation check: 4 of 4 cited sentences were checked against their sources; 1 was changed."
      )
      assert.include(relations, 'Target="https://example.org/study" TargetMode="External"')
      assert.include(relations, 'Target="https://example.org/maine?a=1&amp;b=2" TargetMode="External"')
    })
  )

  it.effect("DOCX carries Russian, Arabic (right to left) and Chinese text as it is", () =>
    Effect.gen(function* () {
      const ru = docxParts(yield* exported(Sessions.russian, "docx")).document
      const ar = docxParts(yield* exported(Sessions.arabic, "docx")).document
      const zh = docxParts(yield* exported(Sessions.chinese, "docx")).document
      assert.include(ru, "Тепловые насосы сохраняют эффективность при морозе.")
      assert.include(ar, "تحافظ المضخات الحرارية على كفاءتها في البرد.")
      assert.include(ar, "<w:bidi/>")
      assert.include(ar, "<w:rtl/>")
      assert.include(zh, "热泵在严寒中仍保持较高效率。")
      assert.include(zh, "引用核查：1 个带引用的句子中")
    })
  )

  it.effect(
    "HTML of an Arabic report runs right to left and names its language; Russian and English left to right",
    () =>
      Effect.gen(function* () {
        const ar = text(yield* exported(Sessions.arabic, "html"))
        assert.match(ar, /^<!doctype html><html lang="ar" dir="rtl">/)
        assert.include(ar, '<article class="report" lang="ar" dir="rtl">')
        const ru = text(yield* exported(Sessions.russian, "html"))
        assert.match(ru, /^<!doctype html><html lang="ru">/)
        assert.include(ru, '<article class="report" lang="ru">')
        assert.match(text(yield* exported(Sessions.english, "html")), /^<!doctype html><html lang="en">/)
      })
  )

  it.effect("PDF names its language by its tag (ru), as a reader's speech and hyphenation take it", () =>
    Effect.gen(function* () {
      const document = ReportDocument.fromSession(Sessions.russian)
      if (document === undefined) return assert.fail("no document")
      const raw = Buffer.from(yield* ReportPdf.render(document, "Источники", { compress: false })).toString("latin1")
      assert.include(raw, "/Lang (ru)")
    })
  )

  it.effect("DOCX names the report's language for Word's proofing: Russian text, Arabic right to left, Chinese", () =>
    Effect.gen(function* () {
      const lang = (styles: string) => /<w:docDefaults>[\s\S]*?(<w:lang [^>]*\/>)/.exec(styles)?.[1] ?? ""
      assert.include(lang(docxParts(yield* exported(Sessions.russian, "docx")).styles), 'w:val="ru"')
      const arabic = lang(docxParts(yield* exported(Sessions.arabic, "docx")).styles)
      assert.include(arabic, 'w:bidi="ar"')
      assert.notInclude(arabic, "w:val=")
      assert.include(lang(docxParts(yield* exported(Sessions.chinese, "docx")).styles), 'w:eastAsia="zh"')
    })
  )

  it.effect(
    "HTML and JSON of Arabic and Chinese reports keep their text, and their source list once, under its own heading",
    () =>
      Effect.gen(function* () {
        const html = text(yield* exported(Sessions.arabic, "html"))
        assert.include(html, "تحافظ المضخات الحرارية")
        assert.include(html, '<h2 id="sources">المصادر</h2>')
        assert.strictEqual(html.split("Cold climate heat pump field study").length, 2, "the source list once")
        const ar = JSON.parse(text(yield* exported(Sessions.arabic, "json")))
        assert.notInclude(
          ar.sections.map((s: { heading: string }) => s.heading),
          "المصادر"
        )
        assert.match(text(yield* exported(Sessions.arabic, "md")), /## المصادر\n\n1\. <a id="source-1"><\/a>/)
        const zh = JSON.parse(text(yield* exported(Sessions.chinese, "json")))
        assert.isTrue(validator()(zh))
        assert.strictEqual(zh.sections[0].blocks[0].sentences[0].text, "热泵在严寒中仍保持较高效率。")
        assert.strictEqual(zh.sections[0].blocks[0].sentences[0].check.label, "supported")
      })
  )
})
