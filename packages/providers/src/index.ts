/**
 * deep-research providers, one folder per kind: the model vendors (`models/`: OpenAI and every OpenAI-compatible
 * server, Anthropic, and `ModelSpec`, which picks one per role from `provider:model` specs, and OpenAI's tokenizer), the search vendors
 * (`search/`: Tavily, Exa, Perplexity, Semantic Scholar, the vendors' native web search, and the fan-out over several),
 * the page extractor (`extract/`), a local document corpus (`corpus/`), the session store on SQLite or PostgreSQL
 * (`store/sql/`), `AtomicFile` for the files kept beside it (a corpus's index), and the environment variables they all
 * read. Each module is also its own subpath (`@deep-research/providers/Tavily`).
 */
export * as OpenAiLanguageModel from "./models/OpenAiLanguageModel.js"
export * as AnthropicLanguageModel from "./models/AnthropicLanguageModel.js"
export * as ModelSpec from "./models/ModelSpec.js"
export * as OpenAiTokenizer from "./models/OpenAiTokenizer.js"
export * as Tavily from "./search/Tavily.js"
export * as Exa from "./search/Exa.js"
export * as Perplexity from "./search/Perplexity.js"
export * as SemanticScholar from "./search/SemanticScholar.js"
export * as OpenAiWebSearch from "./search/OpenAiWebSearch.js"
export * as AnthropicWebSearch from "./search/AnthropicWebSearch.js"
export * as SearchFanout from "./search/SearchFanout.js"
export * as HttpExtractor from "./extract/HttpExtractor.js"
export * as LocalCorpus from "./corpus/LocalCorpus.js"
export * as SqlSessionStore from "./store/sql/SqlSessionStore.js"
export * as AtomicFile from "./files/AtomicFile.js"
export * as Environment from "./Environment.js"
export * as Wikipedia from "./search/Wikipedia.js"
export * as Arxiv from "./search/Arxiv.js"
export * as OpenAlex from "./search/OpenAlex.js"
export * as PubMed from "./search/PubMed.js"
export * as Searxng from "./search/Searxng.js"
export * as Keyless from "./search/Keyless.js"
export * as KeylessBackends from "./search/KeylessBackends.js"
export * as KeylessProviders from "./search/KeylessProviders.js"
export * as Secrets from "./Secrets.js"
