import { version } from "../version.js"

/** The overview `deep-research --help` prints; each command's own `--help` lists its options in full. */
export const rootHelp = `deep-research ${version}: turns a question into a cited research report.

Usage
  deep-research "<question>" [options]      research a question (the same as: deep-research run ...)
  deep-research resume <id> [--answer TEXT] continue a session from its last checkpoint
  deep-research list                        sessions: id, status, created, cost, question
  deep-research show <id>                   a session and its report
  deep-research delete <id>                 delete a session and its files
  deep-research evaluate <id>               judge a report on eight dimensions and check its citations
  deep-research mcp                         serve MCP on stdio (the research options apply)

Research options
  --model PROVIDER:NAME          the default model: openai:gpt-4.1, anthropic:claude-sonnet-4-5, ollama:qwen3, ...
  --model-<role> PROVIDER:NAME   the model of one role: clarification, brief, supervisor, researcher,
                                 summarization, compression, report, evaluation
  --search A,B                   tavily, exa, perplexity, semantic-scholar, openai-native, anthropic-native, local
  --corpus DIR                   research a folder of local documents (adds local search)
  --max-rounds N                 supervision rounds at most (6)
  --concurrency N                researchers at once at most (5)
  --max-tool-calls N             search and extract calls per researcher (10)
  --budget-tokens N              stop researching at this many tokens, then write the report
  --budget-usd X                 stop researching at this cost in USD, then write the report
  --no-clarify                   never ask a clarifying question
  --out FILE                     where to write the report (./deep-research-<id>.md)
  --store DIR                    where sessions are kept (~/.deep-research, or DEEP_RESEARCH_HOME)
  --json                         progress as JSON lines on stdout, nothing else there
  --simulate                     run offline against the built-in emulator; every output is marked simulated

Keys come only from the environment: OPENAI_API_KEY or ANTHROPIC_API_KEY for the models, TAVILY_API_KEY (or
EXA_API_KEY, PERPLEXITY_API_KEY) for search. With OPENAI_BASE_URL pointing at an OpenAI-compatible server (Ollama,
vLLM) no key is needed. Settings can also come from DEEP_RESEARCH_* variables and deep-research.config.json.

Exit codes: 0 done, 1 research failed, 2 usage or configuration error, 130 interrupted (resumable).

Try it without any key:  deep-research --simulate "How do heat pumps compare with gas boilers?"
Help on one command:     deep-research <command> --help
`

/** What `deep-research`, `--help` and `--version` print: answered without loading the rest of the CLI. */
export const quickAnswer = (args: ReadonlyArray<string>): string | undefined => {
  if (args.length === 0 || (args.length === 1 && (args[0] === "--help" || args[0] === "-h"))) return rootHelp
  if (args.length === 1 && args[0] === "--version") return `${version}\n`
  return undefined
}

const distance = (a: string, b: string): number => {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] ?? 0
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] ?? 0
      row[j] = Math.min(above + 1, (row[j - 1] ?? 0) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1))
      diagonal = above
    }
  }
  return row[b.length] ?? 0
}

/** The known name closest to a mistyped one, when it is close enough to be what was meant. */
export const closest = (name: string, known: ReadonlyArray<string>): string | undefined => {
  let best: { readonly name: string; readonly distance: number } | undefined
  for (const candidate of known) {
    const d = distance(name, candidate)
    if (best === undefined || d < best.distance) best = { name: candidate, distance: d }
  }
  return best !== undefined && best.distance <= Math.max(2, Math.floor(name.length / 3)) ? best.name : undefined
}
