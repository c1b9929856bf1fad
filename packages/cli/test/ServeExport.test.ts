/**
 * The HTTP API's exports: a session's report in each format as an attachment of its content type, the JSON Schema
 * the json export follows, and the refusals (an unknown format, an unknown session, a PDF its font cannot show).
 */
import { SessionStore } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { unzipSync, strFromU8 } from "fflate"
import * as Store from "../src/Store.js"
import * as Sessions from "./support/exportSessions.js"
import { post, request, served, settled } from "./ServeHarness.js"

const bytes = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, headers: response.headers, body: new Uint8Array(await response.arrayBuffer()) }
  })

describe("deep-research serve: exports", () => {
  it.scopedLive("GET /api/sessions/{id}/export sends each format as an attachment of its content type", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const created = yield* post(`${s.url}/api/sessions`, { question: "How do tides work?" })
      const id: string = JSON.parse(created.text).sessionId
      yield* settled(s.url, id)
      const at = (format: string) => `${s.url}/api/sessions/${id}/export?format=${format}`

      const md = yield* request(at("md"))
      assert.strictEqual(md.status, 200, md.text)
      assert.strictEqual(md.headers.get("content-type"), "text/markdown; charset=utf-8")
      assert.strictEqual(md.headers.get("content-disposition"), `attachment; filename="deep-research-${id}.md"`)
      assert.include(md.text, "(#source-1)")

      const html = yield* request(at("html"))
      assert.strictEqual(html.headers.get("content-type"), "text/html; charset=utf-8")
      assert.include(html.text, 'href="#source-1"')

      const json = yield* request(at("json"))
      assert.strictEqual(json.headers.get("content-type"), "application/json; charset=utf-8")
      const schema = yield* request(`${s.url}/api/schemas/report-export`)
      assert.strictEqual(schema.status, 200)
      assert.strictEqual(JSON.parse(json.text).$schema, JSON.parse(schema.text).$id)

      const pdf = yield* bytes(at("pdf"))
      assert.strictEqual(pdf.headers.get("content-type"), "application/pdf")
      assert.strictEqual(pdf.headers.get("content-disposition"), `attachment; filename="deep-research-${id}.pdf"`)
      assert.strictEqual(Buffer.from(pdf.body.subarray(0, 5)).toString("latin1"), "%PDF-")

      const docx = yield* bytes(at("docx"))
      assert.strictEqual(
        docx.headers.get("content-type"),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
      )
      assert.include(strFromU8(unzipSync(docx.body)["word/document.xml"] ?? new Uint8Array()), 'w:anchor="source-1"')
    })
  )

  it.scopedLive("an unknown format is a 400, an unknown session a 404, a Chinese report's PDF a 400 saying why", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.save(Sessions.chinese)).pipe(
        Effect.provide(Store.storeLayer(s.resolved.storeDir)),
        Effect.orDie
      )
      const format = yield* request(`${s.url}/api/sessions/${Sessions.chinese.id}/export?format=odt`)
      assert.strictEqual(format.status, 400)
      const missing = yield* request(`${s.url}/api/sessions/dr-nobody/export?format=pdf`)
      assert.strictEqual(missing.status, 404)
      const pdf = yield* request(`${s.url}/api/sessions/${Sessions.chinese.id}/export?format=pdf`)
      assert.strictEqual(pdf.status, 400)
      assert.match(JSON.parse(pdf.text).message, /no glyphs for Chinese, Japanese and Korean characters/)
      const docx = yield* bytes(`${s.url}/api/sessions/${Sessions.chinese.id}/export?format=docx`)
      assert.strictEqual(docx.status, 200)
    })
  )
})
