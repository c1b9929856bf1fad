import { version } from "../version.js"

const researchOptions = `Research options
  --model PROVIDER:NAME          the default model: openai:gpt-4.1, anthropic:claude-sonnet-4-6, ollama:qwen3, ...
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
  --database URL                 a PostgreSQL URL: sessions live there and run on the cluster's workers
                                 (or DEEP_RESEARCH_DATABASE_URL)
  --json                         progress as JSON lines on stdout, nothing else there
  --simulate                     run offline against the built-in emulator; every output is marked simulated`

const keys = `Keys come only from the environment: OPENAI_API_KEY or ANTHROPIC_API_KEY for the models, TAVILY_API_KEY (or
EXA_API_KEY, PERPLEXITY_API_KEY) for search. With OPENAI_BASE_URL pointing at an OpenAI-compatible server (Ollama,
vLLM) no key is needed. Settings can also come from DEEP_RESEARCH_* variables and deep-research.config.json.`

const storeOptions = `Options
  --store DIR      where sessions are kept (~/.deep-research, or DEEP_RESEARCH_HOME)
  --database URL   the PostgreSQL database of a cluster instead (or DEEP_RESEARCH_DATABASE_URL)
  --json           machine-readable output`

/** The overview `deep-research --help` prints. */
export const rootHelp = `deep-research ${version}: turns a question into a cited research report.

Usage
  deep-research "<question>" [options]      research a question (the same as: deep-research run ...)
  deep-research resume <id> [--answer TEXT] continue a session from its last checkpoint
  deep-research list                        sessions: id, status, created, cost, question
  deep-research show <id>                   a session and its report
  deep-research delete <id>                 delete a session and its files
  deep-research evaluate <id>               judge a report on eight dimensions and check its citations
  deep-research mcp                         serve MCP on stdio (the research options apply)
  deep-research serve [--host H] [--port N]  HTTP API, OpenAI-compatible endpoint and web page (default 127.0.0.1:8787)
  deep-research worker --database URL       run the sessions of a cluster (with --database, run, resume, list,
                                            show, delete and evaluate use that cluster and its database)

${researchOptions}

${keys}

Exit codes: 0 done, 1 research failed, 2 usage or configuration error, 130 interrupted (resumable).

Try it without any key:  deep-research --simulate "How do heat pumps compare with gas boilers?"
Help on one command:     deep-research <command> --help
`

/** The help of each command. */
export const commandHelp: Readonly<Record<string, string>> = {
  run: `Usage: deep-research [run] "<question>" [options]

Researches a question: clarifies it when needed (on a terminal), writes a brief, lets a supervisor delegate to
parallel researchers, and writes a report with numbered citations checked against the sources it retrieved. The
report goes to --out and to the session folder; progress is a live view on a terminal, plain lines otherwise.

${researchOptions}

${keys}

Exit codes: 0 done, 1 research failed, 2 usage or configuration error, 130 interrupted: the exact resume command is
printed, and a resumed run does not redo the researchers that had finished.
`,
  resume: `Usage: deep-research resume <id> [--answer TEXT] [options]

Continues a session from its last checkpoint (after Ctrl-C, a crash or a failure); finished researchers are not
redone. --answer answers the clarifying question of a session that waits for one. The session keeps its research
settings; give the model, search, corpus and store options again (the interrupted run printed them).

  --answer TEXT                  the answer to a pending clarifying question

${researchOptions}
`,
  list: `Usage: deep-research list [options]

Lists the sessions, newest first: id, status, created, cost and question.

${storeOptions}
`,
  show: `Usage: deep-research show <id> [options]

Shows a session (question, brief, rounds, sources, status) and its report. With --json, the whole session.

${storeOptions}
`,
  delete: `Usage: deep-research delete <id> [--store DIR]

Deletes a session and its files. A session a run is using is refused.

${storeOptions}
`,
  evaluate: `Usage: deep-research evaluate <id> [options]

Judges a completed session's report on eight dimensions (depth, source quality, analytical rigour, completeness,
groundedness, structure, practical value, balance) with the evaluation role's model, and checks its citations
(pointing nowhere, never cited, duplicates, never retrieved, quotes not in their source). Prints the scores and the
checks and keeps them beside the session as evaluation.json.

Options
  --model PROVIDER:NAME               the default model
  --model-evaluation PROVIDER:NAME    the judge (and --model-<role> for the other roles)
  --store DIR                         where sessions are kept (~/.deep-research, or DEEP_RESEARCH_HOME)
  --database URL                      the PostgreSQL database of a cluster instead (or DEEP_RESEARCH_DATABASE_URL)
  --json                              the evaluation as one JSON line
  --simulate                          judge with the built-in emulator (for simulated sessions)
`,
  mcp: `Usage: deep-research mcp [options]

Serves MCP on stdio: start_research (returns a session id at once; the research runs in the background),
get_status, get_report, list_sessions, answer_clarification, cancel_research and evaluate_report. Sessions are kept
in the same store as the CLI's, so list, show and resume see them. The research options configure every session it
starts; stdout carries only the protocol, log lines go to stderr.

${researchOptions}
  --max-sessions N                    research runs at once at most; further ones wait their turn and get_status
                                      says queued (also DEEP_RESEARCH_MAX_SESSIONS; default no limit)

${keys}
`,
  serve: `Usage: deep-research serve [--host 127.0.0.1] [--port 8787] [options]

Serves, from one process over the same session store as the CLI: a web page at / (ask, watch runs live, answer a
clarifying question, read and download reports), the HTTP API under /api (OpenAPI at /openapi.json, docs at /docs,
progress as Server-Sent Events), and an OpenAI-compatible /v1/chat/completions with the model deep-research.

${researchOptions}
  --host ADDRESS                      where to listen (default 127.0.0.1); any address but loopback needs
                                      DEEP_RESEARCH_API_TOKEN, which clients send as Authorization: Bearer <token>
  --port N                            the port (default 8787; 0 picks a free one)
  --cors ORIGINS                      origins whose pages may call the API, comma-separated (default: CORS off)
  --max-sessions N                    research runs at once at most; further ones wait their turn (queued)

${keys}
`,
  worker: `Usage: deep-research worker --database URL [--host H] [--port N] [--listen ADDRESS] [options]

Joins the research cluster whose PostgreSQL database is --database (or DEEP_RESEARCH_DATABASE_URL) as a runner, and
runs the sessions of the shards it holds, with the models and search given here (each worker brings its own keys).
\`deep-research "<question>" --database URL\` sends a session to the cluster and follows it (--detach: prints its id).
When a worker stops (SIGTERM, Ctrl-C) or dies, its shards move to the others, which resume its sessions from their
last checkpoints. The database must be reachable from every worker; workers reach each other at --host:--port.

  --host ADDRESS                      the address the others reach this runner at (default 127.0.0.1)
  --port N                            the runner's port (default 34431)
  --listen ADDRESS                    the interface to listen on (default: --host; 0.0.0.0 for all)
  --health-port N                     serve GET /health there: 200 while the runner serves, 503 starting or stopping

${researchOptions}
`
}

/**
 * What `deep-research`, `--help`, `<command> --help` and `--version` print: answered without loading the rest of the
 * CLI.
 */
export const quickAnswer = (args: ReadonlyArray<string>): string | undefined => {
  if (args.length === 0 || (args.length === 1 && (args[0] === "--help" || args[0] === "-h"))) return rootHelp
  if (args.length === 1 && args[0] === "--version") return `${version}\n`
  const [first = ""] = args
  if (args.includes("--help") || args.includes("-h")) {
    const end = args.indexOf("--")
    const before = end === -1 ? args : args.slice(0, end)
    if (before.includes("--help") || before.includes("-h")) return commandHelp[first] ?? commandHelp["run"]
  }
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
