/**
 * A simulated research world behind the emulator: model endpoints answer the pipeline's calls plausibly without a
 * script (they read the tools offered and the response format), and the search endpoints serve deterministic fake
 * pages under `/web/sim/`. Used by the CLI's `--simulate` mode and by benchmarks; fast and fully offline. This
 * module routes each endpoint: what the model decides is in `simulatedModel.ts`, the wire shape of its answers in
 * `simulatedReplies.ts`, the pages and the search vendors' answers in `fakeWeb.ts`.
 */
import { readAnthropic, readOpenAi } from "./conversation.js"
import { searchReply } from "./fakeWeb.js"
import { keylessSearchReply } from "./keylessWorld.js"
import { getObjects, getString } from "../wire/json.js"
import { type Refusals, refusal } from "./localServers.js"
import { decide, type Settings } from "./simulatedModel.js"
import {
  anthropicReply,
  anthropicWebSearch,
  openaiReply,
  openaiWebSearch,
  perplexityReply
} from "./simulatedReplies.js"
import type { RecordedRequest, Reply } from "../wire/types.js"

/** Options of the simulation. */
export interface SimulateOptions {
  /** Directives the supervisor delegates in its first round. Default 3. */
  readonly directives?: number | undefined
  /** Supervision rounds with directives before `researchComplete`. Default 1. */
  readonly supervisorRounds?: number | undefined
  /** Search rounds of each researcher before `researchComplete`. Default 1. */
  readonly searchRounds?: number | undefined
  /** Results per search query. Default 3. */
  readonly resultsPerQuery?: number | undefined
  /**
   * The OpenAI-compatible chat endpoint plays a local server that lacks a capability, refusing requests that use it
   * the way that server does: tools as Ollama, vLLM without auto tool choice, or llama.cpp without `--jinja`, and
   * `json_schema` response formats.
   */
  readonly refuse?: Refusals | undefined
}

// =============================================================================
// The fallback
// =============================================================================

/** The fallback answering every endpoint of a simulated world. */
export const simulator = (baseUrl: string, options?: SimulateOptions) => {
  const settings: Settings = {
    directives: options?.directives ?? 3,
    supervisorRounds: options?.supervisorRounds ?? 1,
    searchRounds: options?.searchRounds ?? 1,
    resultsPerQuery: options?.resultsPerQuery ?? 3,
    refuse: options?.refuse ?? {}
  }
  return (request: RecordedRequest): Reply | undefined => {
    const body = request.body
    const inputText = JSON.stringify(body ?? "")
    switch (request.endpoint) {
      case "openai.chat": {
        const refused = refusal(body, settings.refuse)
        if (refused !== undefined) return refused
        const conversation = readOpenAi(body)
        return openaiReply(decide(conversation, settings), conversation, inputText)
      }
      case "anthropic.messages": {
        const conversation = readAnthropic(body)
        const serverSearch = getObjects(body, "tools").some((t) => getString(t, "type", "").startsWith("web_search_"))
        if (serverSearch) return anthropicWebSearch(baseUrl, conversation, settings.resultsPerQuery)
        return anthropicReply(decide(conversation, settings), conversation, inputText)
      }
      case "openai.models":
        // One model, as a local server with one model loaded lists it.
        return {
          kind: "json",
          body: {
            object: "list",
            data: [{ id: "simulated-model", object: "model", created: 1_700_000_000, owned_by: "emulator" }]
          }
        }
      case "openai.responses":
        return openaiWebSearch(baseUrl, body, settings.resultsPerQuery)
      case "perplexity.chat":
        return perplexityReply(baseUrl, body, inputText, settings.resultsPerQuery)
      default:
        return (
          searchReply(baseUrl, request, settings.resultsPerQuery) ??
          keylessSearchReply(baseUrl, request, settings.resultsPerQuery)
        )
    }
  }
}
