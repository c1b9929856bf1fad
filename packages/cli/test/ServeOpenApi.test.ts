/**
 * The OpenAPI document `deep-research serve` publishes at `/openapi.json`, checked against the OpenAPI specification's
 * own JSON Schemas (through `@apidevtools/swagger-parser`, which validates a document with them and resolves every
 * `$ref`), not against what the generator meant to write; and the server's answers checked against the document, as
 * a client generated from it reads them (by Ajv, for JSON Schema 2020-12, the dialect of OpenAPI 3.1).
 */
import SwaggerParser from "@apidevtools/swagger-parser"
import { assert, describe, it } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import { componentName, withValidComponentNames } from "../src/http/openApiNames.js"
import { post, request, served, settled } from "./ServeHarness.js"

interface Answer {
  readonly status: number
  readonly text: string
}

/** The document's schema of the JSON answer of `method path` with `status`, every reference resolved. */
const answerSchemaOf = (document: any, method: string, path: string, status: number): object | undefined =>
  document.paths[path]?.[method]?.responses?.[String(status)]?.content?.["application/json"]?.schema

describe("deep-research serve: the OpenAPI document", () => {
  it.scopedLive("is a valid OpenAPI 3.1 document whose every reference resolves, describing every route", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const response = yield* request(`${s.url}/openapi.json`)
      assert.strictEqual(response.status, 200)
      const document = JSON.parse(response.text)
      const validated = yield* Effect.tryPromise(() => SwaggerParser.validate(structuredClone(document)))
      assert.strictEqual(Reflect.get(validated, "openapi"), "3.1.0")
      for (const name of Object.keys(document.components.schemas)) assert.match(name, /^[a-zA-Z0-9._-]+$/)
      assert.includeMembers(Object.keys(document.paths), [
        "/api/sessions",
        "/api/sessions/{id}",
        "/api/sessions/{id}/events",
        "/api/sessions/{id}/evaluate",
        "/api/health",
        "/v1/models",
        "/v1/chat/completions"
      ])
      // docs/serve.md's table of the API names every route the document describes.
      const readme = fs.readFileSync(new URL("../../../docs/serve.md", import.meta.url), "utf8")
      for (const [path, item] of Object.entries<Record<string, unknown>>(document.paths)) {
        for (const method of Object.keys(item)) {
          assert.include(readme, `\`${method.toUpperCase()} ${path}\``, "docs/serve.md's table of the API")
        }
      }
      // The evaluation's classes are there under their allowed names, and referred to by them.
      assert.property(document.components.schemas, "evaluation.Judge.Judgement")
      assert.include(response.text, '"#/components/schemas/evaluation.Evaluation"')
    })
  )

  it("names a class's full identifier in the characters OpenAPI allows, and rewrites the references to it", () => {
    assert.strictEqual(componentName("@deep-research/evaluation/Judge/Judgement"), "evaluation.Judge.Judgement")
    assert.strictEqual(componentName("Health"), "Health")
    const spec = {
      paths: { "/x": { get: { schema: { $ref: "#/components/schemas/@a~1b" } } } },
      components: { schemas: { "@a/b": { type: "object" }, a_b: { $ref: "#/components/schemas/@a~1b" } } }
    }
    const renamed = withValidComponentNames(spec)
    assert.deepStrictEqual(renamed, {
      paths: { "/x": { get: { schema: { $ref: "#/components/schemas/a.b" } } } },
      components: { schemas: { "a.b": { type: "object" }, a_b: { $ref: "#/components/schemas/a.b" } } }
    })
  })

  it.scopedLive("every answer of the server is what the document says for its route and status, errors included", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const published = yield* request(`${s.url}/openapi.json`)
      const document = yield* Effect.tryPromise(() => SwaggerParser.dereference(JSON.parse(published.text)))
      const ajv = new Ajv2020({ strict: false, allErrors: true })
      const checked: Array<string> = []
      const check = (method: string, path: string, answer: Answer) => {
        const schema = answerSchemaOf(document, method, path, answer.status)
        const label = `${method.toUpperCase()} ${path} ${answer.status}`
        assert.isDefined(schema, `the document describes ${label}`)
        const valid = ajv.validate(schema!, JSON.parse(answer.text))
        assert.isTrue(valid, `${label}: ${answer.text} against the document: ${ajv.errorsText(ajv.errors)}`)
        checked.push(label)
      }

      const created = yield* post(`${s.url}/api/sessions`, { question: "How do tides work?" })
      check("post", "/api/sessions", created)
      const id: string = JSON.parse(created.text).sessionId
      yield* settled(s.url, id)
      check("get", "/api/sessions", yield* request(`${s.url}/api/sessions`))
      check("get", "/api/sessions/{id}", yield* request(`${s.url}/api/sessions/${id}`))
      check("get", "/api/sessions/{id}", yield* request(`${s.url}/api/sessions/dr-nobody`))
      check("get", "/api/sessions/{id}/sources", yield* request(`${s.url}/api/sessions/${id}/sources`))
      check("post", "/api/sessions/{id}/evaluate", yield* post(`${s.url}/api/sessions/${id}/evaluate`, {}))
      check("post", "/api/sessions/{id}/resume", yield* post(`${s.url}/api/sessions/${id}/resume`, {}))
      check("post", "/api/sessions/{id}/cancel", yield* post(`${s.url}/api/sessions/${id}/cancel`, {}))
      check("post", "/api/sessions", yield* post(`${s.url}/api/sessions`, { question: " ", maxRounds: 0 }))
      check("get", "/api/health", yield* request(`${s.url}/api/health`))
      check("get", "/v1/models", yield* request(`${s.url}/v1/models`))
      check("get", "/v1/models/{model}", yield* request(`${s.url}/v1/models/deep-research`))
      check("get", "/v1/models/{model}", yield* request(`${s.url}/v1/models/gpt-4`))
      const ask = (body: unknown) => post(`${s.url}/v1/chat/completions`, body)
      check(
        "post",
        "/v1/chat/completions",
        yield* ask({ model: "deep-research", messages: [{ role: "user", content: "How do tides work?" }] })
      )
      check(
        "post",
        "/v1/chat/completions",
        yield* ask({ model: "gpt-4", messages: [{ role: "user", content: "Tides?" }] })
      )
      check("post", "/v1/chat/completions", yield* ask({ model: "deep-research", messages: [] }))
      check(
        "post",
        "/v1/chat/completions",
        yield* ask({ model: "deep-research", messages: [{ role: "user", content: " " }] })
      )

      const guarded = yield* served({ noClarify: true }, { token: Redacted.make("dr-openapi-token-7c2e9d41") })
      check("get", "/api/sessions", yield* request(`${guarded.url}/api/sessions`))
      check("get", "/v1/models", yield* request(`${guarded.url}/v1/models`))
      const unanswered = yield* post(`${guarded.url}/v1/chat/completions`, { model: "deep-research", messages: [] })
      check("post", "/v1/chat/completions", unanswered)
      assert.includeMembers(checked, [
        "POST /v1/chat/completions 400",
        "POST /v1/chat/completions 401",
        "GET /api/sessions 401",
        "POST /api/sessions 400"
      ])
    })
  )
})
