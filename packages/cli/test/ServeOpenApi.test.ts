/**
 * The OpenAPI document `deep-research serve` publishes at `/openapi.json`, checked against the OpenAPI specification's
 * own JSON Schemas (through `@apidevtools/swagger-parser`, which validates a document with them and resolves every
 * `$ref`), not against what the generator meant to write.
 */
import SwaggerParser from "@apidevtools/swagger-parser"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { componentName, withValidComponentNames } from "../src/http/openApiNames.js"
import { request, served } from "./ServeHarness.js"

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
})
