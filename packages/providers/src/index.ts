/** deep-research providers: model, search and extraction vendors, and the file session store. */
export * as FileSessionStore from "./FileSessionStore.js"
export * as AnthropicLanguageModel from "./AnthropicLanguageModel.js"
export * as OpenAiLanguageModel from "./OpenAiLanguageModel.js"
export * as AnthropicWebSearch from "./AnthropicWebSearch.js"
export * as Tavily from "./Tavily.js"
export * as HttpExtractor from "./HttpExtractor.js"
export * as LocalCorpus from "./LocalCorpus.js"
export * as ModelSpec from "./ModelSpec.js"
