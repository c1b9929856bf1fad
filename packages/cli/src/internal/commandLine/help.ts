import * as Variables from "@deep-research/providers/Environment"
import * as KeylessBackends from "@deep-research/providers/KeylessBackends"
import { version } from "../../version.js"
import * as OptionTable from "./optionTable.js"

const width = 118

/** Help text after a column, wrapped at the help's width with its continuation lines under its start. */
const wrapped = (head: string, text: string): string => {
  const lines: Array<string> = []
  let line = head
  for (const word of text.split(" ")) {
    if (line.length + 1 + word.length > width && line.trim() !== head.trim()) {
      lines.push(line)
      line = " ".repeat(head.length) + word
    } else {
      line = line.endsWith(" ") || line === "" ? line + word : `${line} ${word}`
    }
  }
  return [...lines, line].join("\n")
}

/** A list of options, their help in one column. */
const optionList = (options: Readonly<Record<string, OptionTable.Spec>>): string => {
  const specs = OptionTable.listed(options)
  const flags = specs.map((spec) => `${OptionTable.flagOf(spec)}${spec.value === "" ? "" : ` ${spec.value}`}`)
  const column = Math.max(...flags.map((flag) => flag.length)) + 4
  return specs.map((spec, i) => wrapped(`  ${(flags[i] ?? "").padEnd(column - 2)}`, spec.help)).join("\n")
}

const researchOptions = `Research options
${optionList(OptionTable.research)}`

const options = (command: OptionTable.Command) => `Options
${optionList(OptionTable.commands[command])}`

/** Every search backend `--search` takes, with what it is good for. */
const searchBackends: ReadonlyArray<readonly [string, string]> = [
  ["tavily", `web search with page extraction (${Variables.tavilyApiKey})`],
  ["exa", `neural web search (${Variables.exaApiKey})`],
  ["perplexity", `web answers with their sources (${Variables.perplexityApiKey})`],
  ["openai-native", `the OpenAI model's own web search (${Variables.openaiApiKey})`],
  ["anthropic-native", `the Anthropic model's own web search (${Variables.anthropicApiKey})`],
  ["semantic-scholar", "papers with abstracts and citation counts; no key needed (a key raises its limit)"],
  ...KeylessBackends.names.map((name) => [name, `${KeylessBackends.descriptions[name]}; no key needed`] as const),
  ["local", "the documents of --corpus DIR"]
]

const searchSection = `Search backends (--search A,B; several are merged, a failing one is skipped)
${searchBackends.map(([name, help]) => wrapped(`  ${name.padEnd(18)}`, help)).join("\n")}

${wrapped(
  "",
  `With no search key and no native search (a local or other OpenAI-compatible model), research uses ` +
    `${KeylessBackends.defaultSet.join(", ")} (SearXNG only when ` +
    `${Variables.searxngUrl} is set). ${Variables.contact} (an e-mail address or URL) is the contact these APIs ask ` +
    `of a client; ${Variables.openalexEmail}, ${Variables.openalexApiKey} and ${Variables.ncbiApiKey} raise their limits.`
)}`

const keys = wrapped(
  "",
  `Keys come only from the environment: ${Variables.openaiApiKey} or ${Variables.anthropicApiKey} for the models, ` +
    `${Variables.tavilyApiKey} (or ${Variables.exaApiKey}, ${Variables.perplexityApiKey}) for search. With ` +
    `${Variables.openaiBaseUrl} pointing at an OpenAI-compatible server (Ollama, vLLM) and the keyless search ` +
    "backends, no key is needed at all. Settings " +
    "can also come from DEEP_RESEARCH_* variables and deep-research.config.json."
)

/** How a question is told from a mistyped command (`commandWords`), as the help says it. */
export const questionRule =
  'A question needs more than one word or a final "?": a single word is taken for a mistyped command\n' +
  '(deep-research run "<word>" researches it).'

/** The overview `deep-research --help` prints. */
export const rootHelp = `deep-research ${version}: turns a question into a cited research report.

Usage
  deep-research "<question>" [options]      research a question (the same as: deep-research run ...)
  deep-research resume <id> [--answer TEXT] continue a session from its last checkpoint
  deep-research list                        sessions: id, status, created, cost, question
  deep-research show <id>                   a session and its report
  deep-research delete <id>                 delete a session and its files
  deep-research import <FILE|DIR>           bring another store's sessions in (how a store moves to PostgreSQL)
  deep-research export <id> --format pdf    the report as md, html, pdf, docx or json, citations and check kept
  deep-research search "<words>"            search the sources every session stored (the library)
  deep-research evaluate <id>               judge a report on eight dimensions and check its citations
  deep-research mcp                         serve MCP on stdio (the research options apply)
  deep-research serve [--host H] [--port N]  HTTP API, OpenAI-compatible endpoint and web page (default ${OptionTable.defaults.serveHost}:${OptionTable.defaults.servePort})
  deep-research worker --database URL       run the sessions of a cluster (with --database, run, resume, list,
                                            show, delete and evaluate use that cluster and its database)
  deep-research bench [--ids 1,51-60]       run DeepResearch Bench: articles for its scorer, time and cost per task

${researchOptions}

${searchSection}

${keys}

${questionRule}

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

${options("run")}

${keys}

${questionRule}

Exit codes: 0 done, 1 research failed, 2 usage or configuration error, 130 interrupted: the exact resume command is
printed, and a resumed run does not redo the researchers that had finished.
`,
  resume: `Usage: deep-research resume <id> [--answer TEXT] [options]

Continues a session from its last checkpoint (after Ctrl-C, a crash or a failure); finished researchers are not
redone. --answer answers the clarifying question of a session that waits for one. The session keeps its research
settings; give the model, search, corpus and store options again (the interrupted run printed them).

${options("resume")}
`,
  ask: `Usage: deep-research ask <id> "<question>" [--research] [options]

Answers a follow-up question about a finished session from the sources it stored (their text, not only the report),
citing them with the session's own numbers, the citations checked as a report's are. When the sources do not cover
the question the answer says so and prints the continue command that would research it; --research runs it. Answers
are kept with the session (show lists them). Give the model options as for resume. See docs/follow-up.md.

${options("ask")}
`,
  continue: `Usage: deep-research continue <id> "<direction>" [--rounds N] [options]

Goes deeper: a finished session researches a new direction in a few more supervision rounds, starting from its
brief, findings and sources (no page it read is fetched again), and its report is written again as a new version;
earlier versions stay readable (show <id> --report-version N). See docs/follow-up.md.

${options("continue")}
`,
  list: `Usage: deep-research list [options]

Lists the sessions, newest first, under a header: id, status, created, cost and question, [simulated] before the
question of a session a simulated run made.

${options("list")}
`,
  show: `Usage: deep-research show <id> [options]

Shows a session (question, brief, rounds, sources, status), its report (what the last continuation changed) and its
follow-up answers. --report-version N shows an earlier version of the report. With --json, the whole session.

${options("show")}
`,
  delete: `Usage: deep-research delete <id> [--store DIR]

Deletes a session and its files. A session a run is using is refused.

${options("delete")}
`,
  import: `Usage: deep-research import <FILE|DIR> [--store DIR | --database URL]

Brings every session of another store's database (its deep-research.db, or the store folder holding it) into this
store, whole: checkpoint, events, report, evaluations, and its sources into the library. A session this store holds
already is left as it is; one that cannot be read is named with why. The other database is only read. To move a store
to PostgreSQL: deep-research import ~/.deep-research --database postgres://... . Sessions that were queued or running
are named: deep-research resume <id> finishes one.

${options("import")}
`,
  export: `Usage: deep-research export <id> [--format md|html|pdf|docx|json] [--out FILE] [options]
       deep-research export --json-schema

Writes a completed session's report to hand on: every citation number links to its entry in the source list, every
source to its URL, the sentences the citation check marked stay marked and its closing line travels with it. md, html
and json go to stdout unless --out names a file; pdf and docx go to ./deep-research-<id>.pdf or .docx. A PDF of a
report in a script its font cannot show (Chinese, Japanese, Korean) or written right to left (Arabic, Hebrew) is
refused with the reason; docx and html carry every script. --json-schema prints the schema the json export follows.

${options("export")}
`,
  search: `Usage: deep-research search "<words>" [options]

Searches the library: the passages of the sources every stored session read, ranked by full-text search (SQLite's
FTS5, PostgreSQL's text search), each with its session, title, URL and a snippet. Every word must occur (English
words are stemmed: "cells" finds "cell"). A deleted session's sources leave the library with it. A run with
--library starts from the passages that match its question.

${options("search")}
`,
  evaluate: `Usage: deep-research evaluate <id> [options]

Judges a completed session's report on eight dimensions (depth, source quality, analytical rigour, completeness,
groundedness, structure, practical value, balance) with the evaluation role's model, and checks its citations
(pointing nowhere, never cited, duplicates, never retrieved, quotes not in their source). Prints the scores and the
checks and keeps them beside the session as evaluation.json.

${options("evaluate")}
`,
  mcp: `Usage: deep-research mcp [options]

Serves MCP on stdio: start_research (returns a session id at once; the research runs in the background, in this
process: a client that stops the server stops the run, which is kept cancelled and resumable with resume_research),
get_status, get_report, list_sessions, answer_clarification, cancel_research and evaluate_report. Sessions are kept
in the same store as the CLI's, so list, show and resume see them. The research options configure every session it
starts; stdout carries only the protocol, log lines go to stderr.

${options("mcp")}

${keys}
`,
  serve: `Usage: deep-research serve [--host ${OptionTable.defaults.serveHost}] [--port ${OptionTable.defaults.servePort}] [options]

Serves, from one process over the same session store as the CLI: a web page at / (ask, watch runs live, answer a
clarifying question, read and download reports), the HTTP API under /api (OpenAPI at /openapi.json, docs at /docs,
progress as Server-Sent Events), and an OpenAI-compatible /v1/chat/completions with the model deep-research.

${options("serve")}

${keys}
`,
  bench: `Usage: deep-research bench [--tasks FILE] [--out DIR] [--ids 1,2,51-60] [--language en] [--topic A] [options]

Runs DeepResearch Bench: researches each selected task of its query file (its 100 tasks by default, ids 1-50 in
Chinese, 51-100 in English) a few at a time, and writes in --out the official scorer's input, articles.jsonl ({id,
prompt, article} lines), a table of time, tokens, cost and citation checks per task (table.md, table.json), and a
record per task. Progress goes to stderr, the table to stdout. Stopped anywhere (Ctrl-C, a crash), the same command
goes on where it stopped: completed tasks are not run again, a task cut short resumes its session. Tasks that failed
are run again; the exit code is 1 while any has failed. Try it without any key: deep-research bench --simulate --limit 3

${options("bench")}

${keys}
`,
  worker: `Usage: deep-research worker --database URL [--host H] [--port N] [--listen ADDRESS] [options]

Joins the research cluster whose PostgreSQL database is --database (or ${Variables.databaseUrl}) as a runner, and
runs the sessions of the shards it holds, with the models and search given here (each worker brings its own keys).
\`deep-research "<question>" --database URL\` sends a session to the cluster and follows it (--detach: prints its id).
When a worker stops (SIGTERM, Ctrl-C) or dies, its shards move to the others, which resume its sessions from their
last checkpoints. The database must be reachable from every worker; workers reach each other at --host:--port.

${options("worker")}
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
