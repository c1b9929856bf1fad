import { assert, describe, it } from "@effect/vitest"
import { Duration, Either, Option, Redacted } from "effect"
import { ResearchConfig, Resilience } from "@deep-research/core"
import * as fs from "node:fs"
import * as CliConfig from "../src/CliConfig.js"
import * as McpResearch from "../src/McpResearch.js"
import * as Runs from "../src/Runs.js"
import * as Help from "../src/internal/commandLine/help.js"

const resolveRight = (
  flags: CliConfig.Flags,
  env: CliConfig.Environment,
  file?: CliConfig.FileConfig
): CliConfig.Resolved => {
  const result = CliConfig.resolve(flags, env, file)
  if (Either.isLeft(result)) assert.fail(result.left.message)
  return result.right
}

const resolveLeft = (flags: CliConfig.Flags, env: CliConfig.Environment, file?: CliConfig.FileConfig): string => {
  const result = CliConfig.resolve(flags, env, file)
  if (Either.isRight(result)) return assert.fail("expected a configuration error")
  return result.left.message
}

const decodeFile = (json: unknown) => {
  const result = CliConfig.decodeFileConfig(JSON.stringify(json), "deep-research.config.json")
  if (Either.isLeft(result)) return assert.fail(result.left.message)
  return result.right
}

describe("CliConfig", () => {
  it("the library is on by --library or the config file's library, off by default", () => {
    const env = { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "tvly-x", HOME: "/home/u" }
    assert.isUndefined(resolveRight({}, env).research.library)
    assert.isTrue(resolveRight({ library: true }, env).research.library)
    assert.isTrue(resolveRight({}, env, decodeFile({ library: true })).research.library)
    assert.isFalse(resolveRight({}, env, decodeFile({ library: false })).research.library)
    // The API's and MCP's library option sets it for one run.
    const asked = Runs.configFor(resolveRight({}, env), { library: true })
    assert.isTrue(Either.isRight(asked) && asked.right.library === true)
    assert.property(McpResearch.Args.fields, "library")
  })

  it("flags beat the environment, which beats the config file, which beats the defaults", () => {
    const env = { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "tvly-x", DEEP_RESEARCH_MAX_ROUNDS: "4", HOME: "/home/u" }
    const file = decodeFile({ maxRounds: 2, concurrency: 3, maxToolCalls: 7, model: "openai:gpt-4o" })
    const fromFlags = resolveRight({ maxRounds: 9 }, env, file)
    assert.strictEqual(fromFlags.research.maxSupervisionRounds, 9)
    const fromEnv = resolveRight({}, env, file)
    assert.strictEqual(fromEnv.research.maxSupervisionRounds, 4)
    assert.strictEqual(fromEnv.research.maxConcurrentResearchUnits, 3)
    assert.strictEqual(fromEnv.research.researcherMaxToolCalls, 7)
    assert.strictEqual(fromEnv.models.default, "openai:gpt-4o")
    const defaults = resolveRight({}, { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "tvly-x", HOME: "/home/u" })
    assert.strictEqual(defaults.research.maxSupervisionRounds, 6)
    assert.strictEqual(defaults.research.maxConcurrentResearchUnits, 5)
    assert.strictEqual(defaults.storeDir, "/home/u/.deep-research")
  })

  it("picks sensible default models and search for whichever key is present", () => {
    const openai = resolveRight({}, { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "tvly-x" })
    assert.strictEqual(openai.models.default, "openai:gpt-4.1")
    assert.strictEqual(openai.models.tiers.efficient, "openai:gpt-4.1-mini")
    assert.deepStrictEqual(openai.search, ["tavily"])
    const anthropic = resolveRight({}, { ANTHROPIC_API_KEY: "sk-ant-x" })
    assert.strictEqual(anthropic.models.default, "anthropic:claude-sonnet-4-6")
    assert.deepStrictEqual(anthropic.search, ["anthropic-native"])
    const openaiNative = resolveRight({}, { OPENAI_API_KEY: "sk-x" })
    assert.deepStrictEqual(openaiNative.search, ["openai-native"])
  })

  it("needs no key for an OpenAI-compatible server at OPENAI_BASE_URL", () => {
    const ollama = resolveRight(
      { model: "openai:qwen3", corpus: "./docs" },
      { OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" }
    )
    assert.strictEqual(ollama.models.default, "openai:qwen3")
    assert.deepStrictEqual(ollama.search, ["local"])
    assert.isUndefined(ollama.credentials.openaiApiKey)
  })

  it("without any model key, one message names the environment variables to set", () => {
    const message = resolveLeft({}, {})
    assert.include(message, "OPENAI_API_KEY")
    assert.include(message, "ANTHROPIC_API_KEY")
    assert.include(message, "OPENAI_BASE_URL")
    assert.include(message, "--simulate")
  })

  it("without a search key and no native search, research uses the keyless set, SearXNG first when it is named", () => {
    const local = { OPENAI_BASE_URL: "http://127.0.0.1:1/v1" }
    const keyless = resolveRight({ model: "openai:qwen3" }, local)
    assert.deepStrictEqual(keyless.search, ["wikipedia"], "OpenAlex's keyless allowance is not one run's searches")
    assert.isTrue(keyless.searchDefaulted)
    const withSearxng = resolveRight({ model: "ollama:qwen3" }, { ...local, SEARXNG_URL: "http://127.0.0.1:8888" })
    assert.deepStrictEqual(withSearxng.search, ["searxng", "wikipedia"])
    const withOpenAlexKey = resolveRight({ model: "ollama:qwen3" }, { ...local, OPENALEX_API_KEY: "oa-key" })
    assert.deepStrictEqual(withOpenAlexKey.search, ["wikipedia", "openalex"])
    assert.strictEqual(withSearxng.credentials.keyless.searxng.url, "http://127.0.0.1:8888")
    // A key still chooses as before.
    assert.deepStrictEqual(resolveRight({ model: "openai:qwen3" }, { ...local, TAVILY_API_KEY: "t" }).search, [
      "tavily"
    ])
    assert.isFalse(resolveRight({ model: "openai:qwen3", search: "wikipedia" }, local).searchDefaulted)
  })

  it("--search, DEEP_RESEARCH_SEARCH and the config file take the keyless backends; SearXNG needs its URL", () => {
    const local = { OPENAI_BASE_URL: "http://127.0.0.1:1/v1" }
    assert.deepStrictEqual(resolveRight({ model: "openai:q", search: "arxiv,pubmed" }, local).search, [
      "arxiv",
      "pubmed"
    ])
    assert.deepStrictEqual(
      resolveRight({ model: "openai:q" }, { ...local, DEEP_RESEARCH_SEARCH: "wikipedia" }).search,
      ["wikipedia"]
    )
    assert.deepStrictEqual(
      resolveRight({ model: "openai:q" }, local, decodeFile({ search: ["openalex", "semantic-scholar"] })).search,
      ["openalex", "semantic-scholar"]
    )
    assert.include(resolveLeft({ model: "openai:q", search: "searxng" }, local), "SEARXNG_URL")
  })

  it("reads the keyless APIs' settings from the environment, their keys redacted", () => {
    const env = {
      OPENAI_BASE_URL: "http://127.0.0.1:1/v1",
      WIKIPEDIA_LANGUAGE: "de",
      OPENALEX_EMAIL: "me@example.org",
      OPENALEX_API_KEY: "oa-secret",
      NCBI_API_KEY: "ncbi-secret",
      ARXIV_BASE_URL: "http://127.0.0.1:2/arxiv/api",
      DEEP_RESEARCH_CONTACT: "https://example.org/me"
    }
    const { keyless } = resolveRight({ model: "openai:q" }, env).credentials
    assert.strictEqual(keyless.wikipedia.language, "de")
    assert.strictEqual(keyless.openalex.email, "me@example.org")
    assert.strictEqual(keyless.arxiv.baseUrl, "http://127.0.0.1:2/arxiv/api")
    assert.strictEqual(keyless.contact, "https://example.org/me")
    assert.notInclude(JSON.stringify(keyless), "secret")
  })

  it("--corpus implies local search, and --search can add more", () => {
    const env = { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "tvly-x" }
    assert.deepStrictEqual(resolveRight({ corpus: "/docs" }, env).search, ["local"])
    assert.deepStrictEqual(resolveRight({ corpus: "/docs", search: "tavily" }, env).search, ["tavily", "local"])
  })

  it("rejects unknown search backends, malformed model specs and missing backend keys", () => {
    const env = { OPENAI_API_KEY: "sk-x" }
    assert.include(resolveLeft({ search: "tavily,bing" }, env), "bing")
    assert.include(resolveLeft({ model: "gpt-4.1" }, env), "provider:model")
    assert.include(resolveLeft({ search: "exa" }, env), "EXA_API_KEY")
    assert.include(
      resolveLeft({ model: "anthropic:claude-sonnet-4-6", search: "tavily" }, { TAVILY_API_KEY: "t" }),
      "ANTHROPIC_API_KEY"
    )
  })

  it("per-role models come from --model-<role>, DEEP_RESEARCH_MODEL_<ROLE> and the file, in that order", () => {
    const env = { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "t", DEEP_RESEARCH_MODEL_REPORT: "openai:o3" }
    const file = decodeFile({ models: { report: "openai:gpt-4o", summarization: "openai:gpt-4.1-nano" } })
    const resolved = resolveRight({ modelRoles: { supervisor: "openai:gpt-5" } }, env, file)
    assert.strictEqual(resolved.models.roles.supervisor, "openai:gpt-5")
    assert.strictEqual(resolved.models.roles.report, "openai:o3")
    assert.strictEqual(resolved.models.roles.summarization, "openai:gpt-4.1-nano")
  })

  it("budgets and other research knobs land in the ResearchConfig", () => {
    const file = decodeFile({ research: { maxDirectivesPerRound: 3, summarizationTimeout: 30000 } })
    const resolved = resolveRight(
      { budgetTokens: 100000, budgetUsd: 2.5, noClarify: true },
      { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "t" },
      file
    )
    assert.strictEqual(resolved.research.budget.maxTokens, 100000)
    assert.strictEqual(resolved.research.budget.maxUsd, 2.5)
    assert.strictEqual(resolved.research.maxDirectivesPerRound, 3)
    assert.isTrue(Duration.equals(resolved.research.summarizationTimeout, Duration.seconds(30)))
  })

  it("--require-sources, or requireSources in the config file, makes a run that found no source fail", () => {
    const env = { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "t" }
    assert.isFalse(resolveRight({}, env, undefined).research.requireSources)
    assert.isTrue(resolveRight({ requireSources: true }, env, undefined).research.requireSources)
    assert.isTrue(resolveRight({}, env, decodeFile({ requireSources: true })).research.requireSources)
    assert.isTrue(resolveRight({}, env, decodeFile({ research: { requireSources: true } })).research.requireSources)
    assert.isTrue(
      resolveRight({ requireSources: true }, env, decodeFile({ requireSources: false })).research.requireSources
    )
  })

  it("the file's resilience section sets any provider's rate, burst, concurrency, timeout and retries", () => {
    const env = { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "t" }
    const file = decodeFile({
      resilience: {
        model: { maxConcurrency: 4 },
        providers: {
          tavily: { requestsPerSecond: 5, burst: 20, attemptTimeout: 20000, maxRetries: 1, adaptiveRate: false }
        }
      }
    })
    const resolved = resolveRight({}, env, file)
    const tavily = Resilience.policyFor(resolved.resilience, "tavily", "search")
    assert.strictEqual(tavily.requestsPerSecond, 5)
    assert.strictEqual(tavily.burst, 20)
    assert.strictEqual(tavily.maxRetries, 1)
    assert.isFalse(tavily.adaptiveRate)
    assert.isTrue(Duration.equals(tavily.attemptTimeout, Duration.seconds(20)))
    assert.strictEqual(Resilience.policyFor(resolved.resilience, "openai", "model").maxConcurrency, 4)
    assert.strictEqual(resolveRight({}, env).resilience, Resilience.defaultSettings)
  })

  it("a bad resilience value names its place in the file, and what it may be", () => {
    const bad = CliConfig.decodeFileConfig(
      '{"resilience": {"providers": {"tavily": {"requestsPerSecond": -1}}}}',
      "/x/deep-research.config.json"
    )
    assert.deepStrictEqual(
      Either.getLeft(bad).pipe(Option.map((error) => error.message)),
      Option.some(
        "/x/deep-research.config.json is not a valid config file:\n" +
          "  resilience.providers.tavily.requestsPerSecond: Expected a positive number | null, actual -1"
      )
    )
  })

  it("a provider's settings under a name no provider goes by are refused, naming those there are", () => {
    const typo = CliConfig.decodeFileConfig(
      '{"resilience": {"providers": {"tavly": {"requestsPerSecond": 2}, "exa": {"burst": 2}}}}',
      "cfg.json"
    )
    assert.deepStrictEqual(
      Either.getLeft(typo).pipe(Option.map((error) => error.message)),
      Option.some(
        "cfg.json is not a valid config file:\n  resilience.providers.tavly: no provider goes by this name (they are " +
          "openai, anthropic, ollama, tavily, exa, perplexity, semantic-scholar, searxng, wikipedia, openalex, arxiv, " +
          "pubmed, local, http)"
      )
    )
    const every = Object.fromEntries(CliConfig.resilienceProviders.map((name) => [name, { maxRetries: 1 }]))
    const decoded = CliConfig.decodeFileConfig(JSON.stringify({ resilience: { providers: every } }), "cfg.json")
    assert.isTrue(Either.isRight(decoded))
  })

  it("bad values name their source", () => {
    assert.include(
      resolveLeft({}, { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "t", DEEP_RESEARCH_MAX_ROUNDS: "many" }),
      "DEEP_RESEARCH_MAX_ROUNDS"
    )
    const bad = CliConfig.decodeFileConfig('{"maxRounds": -1}', "/x/deep-research.config.json")
    assert.isTrue(Either.isLeft(bad) && bad.left.message.includes("/x/deep-research.config.json"))
    const unknownKey = CliConfig.decodeFileConfig('{"modle": "openai:gpt-4.1"}', "cfg.json")
    assert.isTrue(Either.isLeft(unknownKey) && unknownKey.left.message.includes("modle"))
  })

  it("every fault of a config file or of its research settings is said at once, not the first alone", () => {
    const file = CliConfig.decodeFileConfig('{"modle": "openai:gpt-4.1", "maxRounds": 0}', "cfg.json")
    if (Either.isRight(file)) return assert.fail("expected the file to be refused")
    assert.include(file.left.message, "modle: is unexpected")
    assert.match(file.left.message, /^ {2}maxRounds: Expected/m)
    const research = resolveLeft(
      {},
      { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "t" },
      decodeFile({ research: { maxRoundz: 3, summarizationInputCap: "big" } })
    )
    assert.include(research, "maxRoundz: is unexpected")
    assert.include(research, `summarizationInputCap: Expected number, actual "big"`)
  })

  it("keys stay redacted and the store honours --store, DEEP_RESEARCH_HOME and ~", () => {
    const resolved = resolveRight(
      {},
      { OPENAI_API_KEY: "sk-secret", TAVILY_API_KEY: "t", DEEP_RESEARCH_HOME: "~/research", HOME: "/home/u" }
    )
    assert.strictEqual(resolved.storeDir, "/home/u/research")
    assert.isTrue(Redacted.isRedacted(resolved.credentials.openaiApiKey))
    assert.notInclude(JSON.stringify(resolved), "sk-secret")
    assert.strictEqual(
      resolveRight({ store: "/tmp/s" }, { OPENAI_API_KEY: "k", TAVILY_API_KEY: "t" }).storeDir,
      "/tmp/s"
    )
  })

  it("--simulate needs no keys at all", () => {
    const resolved = resolveRight({ simulate: true }, {})
    assert.isTrue(resolved.simulate)
    assert.isTrue(resolved.search.length > 0)
  })

  it("a Tavily base URL alone makes Tavily the default search (a self-hosted or emulated endpoint)", () => {
    const resolved = resolveRight(
      { model: "openai:qwen3" },
      { OPENAI_BASE_URL: "http://127.0.0.1:1/v1", TAVILY_BASE_URL: "http://127.0.0.1:1/tavily" }
    )
    assert.deepStrictEqual(resolved.search, ["tavily"])
  })

  it("evaluation needs a model but no search backend", () => {
    const env = { OPENAI_BASE_URL: "http://127.0.0.1:1/v1" }
    const result = CliConfig.resolve({ model: "openai:qwen3" }, env, undefined, "evaluation")
    if (Either.isLeft(result)) return assert.fail(result.left.message)
    assert.deepStrictEqual(result.right.search, [])
    assert.include(
      Either.flip(CliConfig.resolve({}, {}, undefined, "evaluation")).pipe(Either.getOrThrow).message,
      "OPENAI_API_KEY"
    )
  })

  it("a submission to a cluster needs no model or search key (the workers have them); a model it names is checked", () => {
    const database = "postgres://someone@127.0.0.1:5432/research"
    const keyless = CliConfig.resolve({ database, search: "tavily" }, {}, undefined, "submission")
    if (Either.isLeft(keyless)) return assert.fail(keyless.left.message)
    assert.strictEqual(keyless.right.models.default, "", "no model here: the workers bring theirs")
    assert.strictEqual(Redacted.value(keyless.right.credentials.databaseUrl!), database)
    const withKey = CliConfig.resolve({ database }, { ANTHROPIC_API_KEY: "sk-ant-x" }, undefined, "submission")
    if (Either.isLeft(withKey)) return assert.fail(withKey.left.message)
    assert.strictEqual(withKey.right.models.default, "anthropic:claude-sonnet-4-6", "a key's default judges reports")
    const named = CliConfig.resolve({ database, model: "anthropic:claude-haiku-4-5" }, {}, undefined, "submission")
    assert.include(Either.flip(named).pipe(Either.getOrThrow).message, "ANTHROPIC_API_KEY")
    assert.include(resolveLeft({ database }, {}), "No language model is configured", "research here still needs one")
  })

  it("an ollama: model needs no key or base URL", () => {
    const resolved = resolveRight({ model: "ollama:qwen3:8b", corpus: "./notes" }, {})
    assert.strictEqual(resolved.models.default, "ollama:qwen3:8b")
  })

  it("--no-clarify or clarify: false never asks and skips the clarification call, unless research says otherwise", () => {
    const env = { OPENAI_API_KEY: "sk-x", TAVILY_API_KEY: "t" }
    assert.isTrue(resolveRight({}, env).askClarification)
    assert.isTrue(resolveRight({}, env).research.allowClarification)
    const flag = resolveRight({ noClarify: true }, env)
    assert.isFalse(flag.askClarification)
    assert.isFalse(flag.research.allowClarification)
    const off = resolveRight({}, env, decodeFile({ clarify: false }))
    assert.isFalse(off.askClarification)
    assert.isFalse(off.research.allowClarification)
    const kept = resolveRight({ noClarify: true }, env, decodeFile({ research: { allowClarification: true } }))
    assert.isTrue(kept.research.allowClarification)
    const skipped = resolveRight({}, env, decodeFile({ research: { allowClarification: false } }))
    assert.isFalse(skipped.research.allowClarification)
  })

  it("list, show and delete find the store as a run does: --store, DEEP_RESEARCH_HOME, the file, ~/.deep-research", () => {
    const file = decodeFile({ store: "~/research" })
    const home = { HOME: "/home/u" }
    assert.strictEqual(CliConfig.storeDirOf("/s", { ...home, DEEP_RESEARCH_HOME: "/e" }, file), "/s")
    assert.strictEqual(CliConfig.storeDirOf(undefined, { ...home, DEEP_RESEARCH_HOME: "/e" }, file), "/e")
    assert.strictEqual(CliConfig.storeDirOf(undefined, home, file), "/home/u/research")
    assert.strictEqual(CliConfig.storeDirOf(undefined, home, undefined), "/home/u/.deep-research")
  })

  it("--help and the README's table name every search backend with what it is good for", () => {
    const readme = fs.readFileSync(new URL("../../../README.md", import.meta.url), "utf8")
    for (const backend of CliConfig.SearchBackend.literals) {
      assert.match(
        readme,
        new RegExp(`\\| \`${backend}\` +\\| \\w`),
        `the README's table of search backends: ${backend}`
      )
      assert.match(Help.rootHelp, new RegExp(`\\n  ${backend} +\\w`), `--help: ${backend}`)
    }
  })

  it("docs/configuration.md's table of research knobs names every knob the config file's research takes, with its default", () => {
    const readme = fs.readFileSync(new URL("../../../docs/configuration.md", import.meta.url), "utf8")
    const rows = new Map(
      [...readme.matchAll(/^\| `([A-Za-z]+)` +\| `([^`]+)` +\|/gm)].map((row) => [row[1] ?? "", row[2] ?? ""])
    )
    for (const [knob, value] of Object.entries(ResearchConfig.defaults)) {
      const written = rows.get(knob)
      assert.isDefined(written, `docs/configuration.md's table lacks ${knob}`)
      if (knob === "budget") continue
      const expected = Duration.isDuration(value) ? String(Duration.toMillis(value)) : String(value)
      assert.strictEqual(written, expected, `docs/configuration.md's default of ${knob}`)
    }
  })
})
