/**
 * `deep-research export` as a user runs it (in this process): a simulated run's report in each format, to stdout or to
 * the file named after the session, the JSON Schema it follows, and the plain refusals (exit 2) of an unknown format,
 * an unknown session and a PDF its font cannot show.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import { unzipSync, strFromU8 } from "fflate"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Sessions from "./support/exportSessions.js"
import { run } from "./support/inProcess.js"

let sandbox: string
let store: string
let id: string

const cli = (args: ReadonlyArray<string>) => run(args, { cwd: sandbox, env: { HOME: nodePath.join(sandbox, "home") } })

beforeAll(async () => {
  sandbox = fs.mkdtempSync(nodePath.join(os.tmpdir(), "export-cli-"))
  store = nodePath.join(sandbox, "store")
  const ran = await cli([
    "--simulate",
    "--no-clarify",
    "--store",
    store,
    "--out",
    nodePath.join(sandbox, "r.md"),
    "How do heat pumps compare with gas boilers?"
  ])
  assert.strictEqual(ran.code, 0, ran.stderr)
  const listed = await cli(["list", "--store", store, "--json"])
  id = JSON.parse(listed.stdout.trim().split("\n")[0] ?? "{}").id
  await Sessions.saveAll(store, [Sessions.chinese])
})

afterAll(() => fs.rmSync(sandbox, { recursive: true, force: true }))

describe("deep-research export", () => {
  it("--format json prints the report as data that its --json-schema validates, with the check's verdicts", async () => {
    const schema = await cli(["export", "--json-schema"])
    assert.strictEqual(schema.code, 0, schema.stderr)
    const ajv = new Ajv2020({ strict: true })
    ajv.addFormat("date-time", (value: string) => !Number.isNaN(Date.parse(value)))
    const validate = ajv.compile(JSON.parse(schema.stdout))
    const ran = await cli(["export", id, "--format", "json", "--store", store])
    assert.strictEqual(ran.code, 0, ran.stderr)
    const exported = JSON.parse(ran.stdout)
    assert.isTrue(validate(exported), JSON.stringify(validate.errors))
    assert.strictEqual(exported.$schema, JSON.parse(schema.stdout).$id)
    assert.strictEqual(exported.check.status, "checked")
    const sentences = exported.sections.flatMap((s: { blocks: Array<{ sentences: Array<unknown> }> }) =>
      s.blocks.flatMap((b) => b.sentences)
    )
    const checked = sentences.filter((s: { check: unknown }) => s.check !== null)
    // Every verdict the check recorded is found on its sentence.
    assert.strictEqual(checked.length, exported.check.counts.sentences)
    assert.isTrue(sentences.some((s: { marked: boolean }) => s.marked))
  })

  it("md (the default) goes to stdout with linked citations and the check's line", async () => {
    const ran = await cli(["export", id, "--store", store])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.include(ran.stdout, "[[1](#source-1)]")
    assert.include(ran.stdout, '1. <a id="source-1"></a>[')
    assert.match(ran.stdout, /\*Citation check: \d+ of \d+ cited sentences were checked/)
  })

  it("pdf goes to ./deep-research-<id>.pdf, docx to the folder --out names", async () => {
    const pdf = await cli(["export", id, "--format", "pdf", "--store", store])
    assert.strictEqual(pdf.code, 0, pdf.stderr)
    assert.strictEqual(pdf.stdout, "")
    const pdfFile = nodePath.join(sandbox, `deep-research-${id}.pdf`)
    assert.include(pdf.stderr, `Wrote deep-research-${id}.pdf`)
    assert.match(fs.readFileSync(pdfFile, "latin1"), /^%PDF-[\s\S]*\/S \/GoTo[\s\S]*%%EOF\s*$/)
    const folder = nodePath.join(sandbox, "out")
    fs.mkdirSync(folder)
    const docx = await cli(["export", id, "--format", "docx", "--out", folder, "--store", store])
    assert.strictEqual(docx.code, 0, docx.stderr)
    const files = unzipSync(fs.readFileSync(nodePath.join(folder, `deep-research-${id}.docx`)))
    const document = strFromU8(files["word/document.xml"] ?? new Uint8Array())
    assert.match(document, /<w:hyperlink [^>]*w:anchor="source-1"/)
    assert.include(document, "Citation check:")
  })

  it("html to a file named by --out", async () => {
    const file = nodePath.join(sandbox, "report.html")
    const ran = await cli(["export", id, "--format", "html", "--out", file, "--store", store])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.include(fs.readFileSync(file, "utf8"), '<a class="cite" href="#source-1">1</a>')
  })

  it("an unknown format, an unknown session or a missing id exits 2 with one sentence", async () => {
    const format = await cli(["export", id, "--format", "odt", "--store", store])
    assert.strictEqual(format.code, 2)
    assert.include(format.stderr, '"odt" is not an export format; use one of md, html, pdf, docx, json.')
    const missing = await cli(["export", "no-such-session", "--format", "pdf", "--store", store])
    assert.strictEqual(missing.code, 2)
    assert.match(missing.stderr, /no-such-session/)
    assert.isFalse(fs.existsSync(nodePath.join(sandbox, "deep-research-no-such-session.pdf")))
    const noId = await cli(["export", "--store", store])
    assert.strictEqual(noId.code, 2)
    assert.include(noId.stderr, "export needs a session id")
  })

  it("a Chinese report's PDF is refused (exit 2, the reason said); its DOCX is written", async () => {
    const pdf = await cli(["export", Sessions.chinese.id, "--format", "pdf", "--store", store])
    assert.strictEqual(pdf.code, 2)
    assert.include(pdf.stderr, "has no glyphs for Chinese, Japanese and Korean characters")
    assert.isFalse(fs.existsSync(nodePath.join(sandbox, `deep-research-${Sessions.chinese.id}.pdf`)))
    const docx = await cli(["export", Sessions.chinese.id, "--format", "docx", "--out", "-", "--store", store])
    assert.strictEqual(docx.code, 0, docx.stderr)
  })
})
