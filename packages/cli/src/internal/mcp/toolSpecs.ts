/**
 * A tool of the MCP server as `tools/list` gives it: its name, title and description, its input and output JSON
 * Schemas made from Effect Schemas, the hints a client may rely on, and whether it may run as a task.
 */
import { Tool } from "@deep-research/core"
import type * as Schema from "effect/Schema"

/**
 * What a client may assume of a tool (MCP's tool annotations): a client asks its user before a call its hints say may
 * change or destroy something. Left out, MCP takes every tool to be destructive and to reach the open world.
 */
export interface Hints {
  /** Changes nothing: reads the session store. */
  readonly readOnlyHint: boolean
  /** May remove or replace what is stored (meaningful when not read-only). */
  readonly destructiveHint?: boolean
  /** Calling it again with the same arguments changes nothing more (meaningful when not read-only). */
  readonly idempotentHint?: boolean
  /** Reaches beyond the session store: the web and the language models that research. */
  readonly openWorldHint: boolean
}

export interface ToolSpec {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly inputSchema: ReturnType<typeof Tool.jsonSchemaOf>
  /** The JSON Schema of the tool's structured result, for the tools that answer with data rather than a text. */
  readonly outputSchema?: ReturnType<typeof Tool.jsonSchemaOf>
  readonly annotations: Hints & { readonly title: string }
  /** Whether a client may call it as an MCP task (left out: it may not). */
  readonly execution?: { readonly taskSupport: "optional" }
}

export const spec = <A, I, O, OI>(
  name: string,
  title: string,
  description: string,
  schema: Schema.Schema<A, I>,
  hints: Hints,
  output?: Schema.Schema<O, OI>
): ToolSpec => ({
  name,
  title,
  description,
  inputSchema: Tool.jsonSchemaOf(schema),
  ...(output === undefined ? {} : { outputSchema: Tool.jsonSchemaOf(output) }),
  // The title again among the annotations, where clients of MCP's 2025-03-26 revision read it.
  annotations: { title, ...hints }
})

/** A tool as `tools/list` gives it: the optional parts only when they are there. */
export const listed = (t: ToolSpec): Partial<ToolSpec> & Pick<ToolSpec, "name" | "title" | "description"> => ({
  name: t.name,
  title: t.title,
  description: t.description,
  inputSchema: t.inputSchema,
  ...(t.outputSchema === undefined ? {} : { outputSchema: t.outputSchema }),
  annotations: t.annotations,
  ...(t.execution === undefined ? {} : { execution: t.execution })
})
