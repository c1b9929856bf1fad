import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as Tool from "../src/Tool.js"
import * as StructuredOutput from "../src/StructuredOutput.js"
import { Directive } from "../src/Research.js"
import * as Researcher from "../src/phases/Researcher.js"
import * as Supervisor from "../src/phases/Supervisor.js"
import { defaults } from "../src/ResearchConfig.js"

// What both vendors document for tool parameters and response formats: a JSON Schema object at the root.
const assertObjectRoot = (schema: Record<string, unknown>) => {
  assert.strictEqual(schema["type"], "object")
  assert.notProperty(schema, "$ref")
  assert.notProperty(schema, "anyOf")
  assert.notProperty(schema, "$id")
}

const refsIn = (value: unknown): Array<string> =>
  Array.isArray(value)
    ? value.flatMap(refsIn)
    : typeof value === "object" && value !== null
      ? Object.entries(value).flatMap(([key, child]) =>
          key === "$ref" && typeof child === "string" ? [child] : refsIn(child)
        )
      : []

describe("Tool wire schemas", () => {
  it("every tool the supervisor and the researcher send has an object at its root and no reference", () => {
    const researcher = Researcher.makeTools(defaults)
    const tools = [
      Supervisor.think,
      Supervisor.conductResearch,
      Supervisor.researchComplete,
      researcher.webSearch,
      researcher.extractContent,
      researcher.think,
      researcher.researchComplete
    ]
    for (const tool of tools) {
      assertObjectRoot(tool.definition.parameters)
      assert.deepStrictEqual(refsIn(tool.definition.parameters), [], tool.name)
      assert.isFalse(tool.wrapped, tool.name)
    }
  })

  it("the researcher's tools are sized by the configuration, and shared between units of the same sizes", () => {
    const first = Researcher.makeTools({ maxQueriesPerSearch: 2, maxUrlsPerExtract: 4 })
    const again = Researcher.makeTools({ maxQueriesPerSearch: 2, maxUrlsPerExtract: 4 })
    const other = Researcher.makeTools({ maxQueriesPerSearch: 5, maxUrlsPerExtract: 4 })
    assert.strictEqual(again, first)
    const maxItems = (tool: { readonly definition: Tool.ToolDefinition }, field: string) =>
      Object(Object(tool.definition.parameters["properties"])[field])["maxItems"]
    assert.strictEqual(maxItems(first.webSearch, "queries"), 2)
    assert.strictEqual(maxItems(other.webSearch, "queries"), 5)
    assert.strictEqual(maxItems(first.extractContent, "urls"), 4)
    // The Schema that decodes the arguments holds the same bound as the JSON schema the model is sent.
    assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(first.webSearch.schema)({ queries: ["a", "b", "c"] })))
    assert.isTrue(Either.isRight(Schema.decodeUnknownEither(other.webSearch.schema)({ queries: ["a", "b", "c"] })))
  })

  it("a class (a root reference in Effect's JSON Schema) is inlined at the root", () => {
    const schema = Tool.jsonSchemaOf(Directive)
    assertObjectRoot(schema)
    assert.deepStrictEqual(schema["required"], ["topic", "perspective", "evidenceNeeded", "priority"])
    // The integer refinement's definition is inlined with its bounds beside it.
    assert.deepInclude(Object(schema["properties"])["priority"], { type: "integer", minimum: 1, maximum: 3 })
  })

  it("an empty struct is an object with no properties, not `object or array`", () => {
    assert.deepStrictEqual(Tool.jsonSchemaOf(Schema.Struct({})), {
      type: "object",
      properties: {},
      required: [],
      additionalProperties: false
    })
  })

  it("a recursive schema keeps its definition under $defs at the root, referenced from inside", () => {
    interface Node {
      readonly name: string
      readonly children: ReadonlyArray<Node>
    }
    const Node: Schema.Schema<Node> = Schema.Struct({
      name: Schema.String,
      children: Schema.Array(Schema.suspend(() => Node))
    }).annotations({ identifier: "Node" })
    const schema = Tool.jsonSchemaOf(Node)
    assertObjectRoot(schema)
    const defs = Object(schema["$defs"])
    for (const ref of refsIn(schema)) {
      assert.match(ref, /^#\/\$defs\/[A-Za-z0-9_]+$/)
      assert.property(defs, ref.slice("#/$defs/".length))
    }
  })

  it("a value that is not an object travels as { value } and is unwrapped before decoding", () => {
    const List = Schema.Array(Schema.String)
    const wire = Tool.wireSchemaOf(List)
    assert.isTrue(wire.wrapped)
    assert.deepStrictEqual(wire.schema["required"], ["value"])
    const tool = Tool.make("list", { description: "a list", schema: List })
    assert.deepStrictEqual(Either.getOrThrow(Tool.decodeArguments(tool, { value: ["a"] })), ["a"])
    assert.deepStrictEqual(Either.getOrThrow(StructuredOutput.parseAnswer(List, '{"value":["b"]}')), ["b"])
  })

  it("a union of objects is wrapped too: a root anyOf is refused by both vendors", () => {
    const Either_ = Schema.Union(Schema.Struct({ a: Schema.String }), Schema.Struct({ b: Schema.Number }))
    const wire = Tool.wireSchemaOf(Either_)
    assert.isTrue(wire.wrapped)
    assertObjectRoot(wire.schema)
    const tool = Tool.make("either", { description: "one of two", schema: Either_ })
    assert.deepStrictEqual(Either.getOrThrow(Tool.decodeArguments(tool, { value: { b: 2 } })), { b: 2 })
  })
})
