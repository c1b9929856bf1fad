/**
 * OpenAI-compatible servers that lack a capability, refusing requests that use it the way each of them does: tools as
 * Ollama (`<model> does not support tools`), vLLM without auto tool choice, or llama.cpp's server without `--jinja`
 * (a 500), and `json_schema` response formats. The simulated world plays them when asked to.
 */
import { get, getArray, getString } from "../wire/json.js"
import type { Reply } from "../wire/types.js"

/** An OpenAI-compatible server that may lack tool calling. */
export type LocalServer = "ollama" | "vllm" | "llamacpp"

/** What the simulated server refuses. */
export interface Refusals {
  readonly tools?: LocalServer | undefined
  readonly jsonSchema?: boolean | undefined
}

/** How each server says it has no tool calling (status and body as they answer). */
const toolsRefusal = (server: LocalServer, model: string): Reply => {
  switch (server) {
    case "ollama":
      return {
        kind: "json",
        status: 400,
        body: {
          error: {
            message: `registry.ollama.ai/library/${model}:latest does not support tools`,
            type: "api_error",
            param: null,
            code: null
          }
        }
      }
    case "vllm":
      return {
        kind: "json",
        status: 400,
        body: {
          object: "error",
          message: '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
          type: "BadRequestError",
          param: null,
          code: 400
        }
      }
    case "llamacpp":
      return {
        kind: "json",
        status: 500,
        body: { error: { code: 500, message: "tools param requires --jinja flag", type: "server_error" } }
      }
  }
}

/** A server that takes no JSON schema for its answers. */
const jsonSchemaRefusal: Reply = {
  kind: "json",
  status: 400,
  body: {
    error: {
      code: 400,
      message: 'response_format type must be one of "text" or "json_object"',
      type: "invalid_request_error"
    }
  }
}

/** The refusal a server lacking a capability gives this request, if any. */
export const refusal = (body: unknown, refuse: Refusals): Reply | undefined => {
  if (refuse.tools !== undefined && getArray(body, "tools").length > 0) {
    return toolsRefusal(refuse.tools, getString(body, "model", "model"))
  }
  if (refuse.jsonSchema === true && getString(get(body, "response_format"), "type", "") === "json_schema") {
    return jsonSchemaRefusal
  }
  return undefined
}
