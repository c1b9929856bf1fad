/**
 * The emulator's vocabulary, shared by the public module and the route handlers.
 */

/** An endpoint of the emulator, named `vendor.operation`. */
export type Endpoint =
  | "openai.chat"
  | "openai.responses"
  | "openai.models"
  | "anthropic.messages"
  | "tavily.search"
  | "tavily.extract"
  | "exa.search"
  | "exa.contents"
  | "perplexity.chat"
  | "semanticScholar.search"
  | "web.page"
  | KeylessEndpoint

/** The endpoints of the keyless search APIs (`keyless.ts`). */
export type KeylessEndpoint =
  "wikipedia.api" | "arxiv.query" | "openalex.works" | "pubmed.esearch" | "pubmed.efetch" | "searxng.search"

/** Every endpoint, in a stable order. */
export const endpoints: ReadonlyArray<Endpoint> = [
  "openai.chat",
  "openai.responses",
  "openai.models",
  "anthropic.messages",
  "tavily.search",
  "tavily.extract",
  "exa.search",
  "exa.contents",
  "perplexity.chat",
  "semanticScholar.search",
  "web.page",
  "wikipedia.api",
  "arxiv.query",
  "openalex.works",
  "pubmed.esearch",
  "pubmed.efetch",
  "searxng.search"
]

/** A vendor whose base URL the emulator serves. */
export type Vendor =
  | "openai"
  | "anthropic"
  | "tavily"
  | "exa"
  | "perplexity"
  | "semanticScholar"
  | "web"
  | "wikipedia"
  | "arxiv"
  | "openalex"
  | "pubmed"
  | "searxng"

/** One request the emulator received. */
export interface RecordedRequest {
  readonly endpoint: Endpoint
  readonly method: string
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  readonly headers: Readonly<Record<string, string>>
  /** The parsed JSON body, the raw text when it is not JSON, or undefined when empty. */
  readonly body: unknown
  /** Epoch milliseconds. */
  readonly at: number
}

/** A failure the emulator plays in the vendor's own shape. */
export type Fault =
  | { readonly type: "rate_limit"; readonly retryAfterSeconds?: number | undefined }
  | { readonly type: "quota" }
  | { readonly type: "server_error"; readonly status: 500 | 502 | 503 | 529 }
  | { readonly type: "auth" }
  | { readonly type: "context_length" }
  | { readonly type: "hang" }
  | { readonly type: "reset" }
  | { readonly type: "malformed_json" }
  | { readonly type: "invalid_tool_arguments" }

/** What the emulator answers to one request. */
export type Reply =
  | {
      readonly kind: "json"
      readonly status?: number | undefined
      readonly headers?: Readonly<Record<string, string>> | undefined
      readonly body: unknown
    }
  | {
      readonly kind: "sse"
      readonly status?: number | undefined
      readonly headers?: Readonly<Record<string, string>> | undefined
      /** Raw event-stream text, sent byte for byte. */
      readonly text: string
    }
  | {
      readonly kind: "raw"
      readonly status?: number | undefined
      readonly headers?: Readonly<Record<string, string>> | undefined
      readonly body: string
    }
  | { readonly kind: "fault"; readonly fault: Fault }

/** How an endpoint answers: one reply always, replies in order (the last repeats), or a function of the request. */
export type Responder = Reply | ReadonlyArray<Reply> | ((request: RecordedRequest) => Reply | Promise<Reply>)
