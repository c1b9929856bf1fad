/**
 * Every option of the CLI, named once. The parser's options (`Commands`), the names a mistyped option is matched
 * against, the help's option lists, the resume command printed after an interruption and the flags named in
 * configuration errors all come from here.
 */
import * as Defaults from "@deep-research/core/Defaults"
import * as Variables from "@deep-research/providers/Environment"

// =============================================================================
// Options
// =============================================================================

export type Kind = "text" | "integer" | "float" | "boolean"

/** One option: its name after `--`, the kind of its value, the value's placeholder in the help, and its help. */
export interface Spec<K extends Kind = Kind> {
  readonly name: string
  readonly kind: K
  readonly value: string
  readonly help: string
}

const text = (name: string, value: string, help: string): Spec<"text"> => ({ name, kind: "text", value, help })
const integer = (name: string, help: string): Spec<"integer"> => ({ name, kind: "integer", value: "N", help })
const float = (name: string, help: string): Spec<"float"> => ({ name, kind: "float", value: "X", help })
const flag = (name: string, help: string): Spec<"boolean"> => ({ name, kind: "boolean", value: "", help })

const bounds = Defaults.upperBounds

/** How an option is written on the command line: `--max-rounds`. */
export const flagOf = (spec: Spec): string => `--${spec.name}`

export const defaults = {
  serveHost: "127.0.0.1",
  servePort: 8787,
  workerHost: "127.0.0.1",
  workerPort: 34431
} as const

export const model = text(
  "model",
  "PROVIDER:NAME",
  "the default model: openai:gpt-4.1, anthropic:claude-sonnet-4-6, ollama:qwen3, ..."
)

/** The model of one role: `--model-report`. */
export const roleModel = (role: Defaults.Role): Spec<"text"> =>
  text(`model-${role}`, "PROVIDER:NAME", `the model of the ${role} role`)

/** The role models as the help lists them, in one line. */
export const roleModels = text("model-<role>", "PROVIDER:NAME", `the model of one role: ${Defaults.roles.join(", ")}`)

/** The research options, shared by every command that runs research. */
export const research = {
  model,
  search: text(
    "search",
    "A,B",
    "search backends, comma-separated (see Search backends; the default depends on the keys)"
  ),
  corpus: text(
    "corpus",
    "DIR",
    "research a folder of local documents: any text file, and HTML and PDF (adds local search)"
  ),
  maxRounds: integer(
    "max-rounds",
    `supervision rounds at most (${Defaults.research.maxSupervisionRounds}; up to ${bounds.maxSupervisionRounds})`
  ),
  concurrency: integer(
    "concurrency",
    `researchers at once at most (${Defaults.research.maxConcurrentResearchUnits}; up to ${bounds.maxConcurrentResearchUnits})`
  ),
  maxToolCalls: integer(
    "max-tool-calls",
    `search and extract calls per researcher (${Defaults.research.researcherMaxToolCalls}; up to ${bounds.researcherMaxToolCalls})`
  ),
  budgetTokens: integer("budget-tokens", `spend at most this many tokens, report included (up to ${bounds.maxTokens})`),
  budgetUsd: float("budget-usd", `spend at most this much in USD, report included (up to ${bounds.maxUsd})`),
  noClarify: flag("no-clarify", "never ask a clarifying question"),
  requireSources: flag("require-sources", "fail (exit 1) when the report rests on no source; by default it says so"),
  noVerify: flag("no-verify", "leave the report's citations unchecked against their sources (checked by default)"),
  includeDomains: text(
    "include-domains",
    "A,B",
    "use only these hosts and their subdomains (checked on every result and page, whatever a backend returns)"
  ),
  excludeDomains: text("exclude-domains", "A,B", "never use these hosts or their subdomains"),
  since: text("since", "YYYY-MM-DD", "only sources published on or after this day; a source with no date is left out"),
  until: text("until", "YYYY-MM-DD", "only sources published on or before this day; a source with no date is left out"),
  sources: text(
    "sources",
    "KINDS",
    "only these kinds of source: academic, news, encyclopedia, web, local (told by the backend and the host)"
  ),
  review: flag(
    "review",
    "show the brief and the first directives before any search: approve, edit or cancel them (never waits off a terminal)"
  ),
  library: flag(
    "library",
    "start from the library: what earlier sessions stored on the question enters the research before any search"
  ),
  reportLanguage: text(
    "report-language",
    "LANG",
    "write the report in this language (de, German, ...); searches stay in the question's"
  ),
  words: text(
    "words",
    "N",
    "the report's length in words (100 to 20000), or brief, standard, long, extended (500, 1500, 4000, 8000); past " +
      "1500 it is written by sections"
  ),
  outline: text("outline", "A;B|FILE", "the report's sections, in order: titles separated by ;, or a file, one a line"),
  instructions: text("instructions", "TEXT", "what the writer is told: audience, tone, what to stress"),
  out: text("out", "FILE", "where to write the report, a file or a folder (./deep-research-<id>.md)"),
  store: text("store", "DIR", `where sessions are kept (${Variables.defaultHome}, or ${Variables.home})`),
  database: text(
    "database",
    "URL",
    `a PostgreSQL URL: sessions live there and run on the cluster's workers (or ${Variables.databaseUrl})`
  ),
  json: flag("json", "progress as JSON lines on stdout, nothing else there"),
  simulate: flag("simulate", "run offline against the built-in emulator; every output is marked simulated")
} as const

/** The options of the commands that read or delete stored sessions. */
const stored = {
  store: research.store,
  database: text("database", "URL", `the PostgreSQL database of a cluster instead (or ${Variables.databaseUrl})`),
  json: flag("json", "machine-readable output")
} as const

const maxSessions = integer(
  "max-sessions",
  "research runs at once at most; further ones wait their turn and their status says queued " +
    `(also DEEP_RESEARCH_MAX_SESSIONS; default no limit; up to ${bounds.maxSessions})`
)

// A worker writes no report file and prints no progress, and its sessions live in the cluster's database.
const { out: _out, json: _json, store: _store, ...workerResearch } = research

/** Each command's options, by the name its handler gives the value. Commands with `model` also take role models. */
export const commands = {
  run: {
    ...research,
    detach: flag("detach", "with --database: print the session's id once the cluster has it, and return")
  },
  resume: { answer: text("answer", "TEXT", "the answer to a pending clarifying question"), ...research },
  ask: {
    research: flag("research", "when the stored sources do not cover the question, research it (a continuation)"),
    ...research
  },
  continue: {
    rounds: integer("rounds", "supervision rounds the continuation may run (2; at most the round limit)"),
    ...research
  },
  list: stored,
  show: { ...stored, version: integer("report-version", "show this earlier version of the report (1 is the first)") },
  delete: stored,
  import: stored,
  export: {
    format: text("format", "FORMAT", "md (the default), html, pdf, docx or json"),
    out: text(
      "out",
      "FILE",
      "write it to this file (md, html and json go to stdout by default; pdf and docx to ./deep-research-<id>.pdf " +
        "or .docx); - for stdout"
    ),
    jsonSchema: flag("json-schema", "print the JSON Schema of the json export (no id needed)"),
    store: research.store,
    database: stored.database
  },
  search: {
    limit: integer("limit", "passages at most (10; up to 200)"),
    ...stored
  },
  evaluate: {
    model: research.model,
    store: research.store,
    database: stored.database,
    json: flag("json", "the evaluation as one JSON line"),
    simulate: flag("simulate", "judge with the built-in emulator (for simulated sessions)")
  },
  mcp: { ...research, maxSessions },
  serve: {
    ...research,
    maxSessions,
    host: text(
      "host",
      "ADDRESS",
      `where to listen (default ${defaults.serveHost}); any address but loopback needs ${Variables.apiToken}, ` +
        "which clients send as Authorization: Bearer <token>"
    ),
    port: integer("port", `the port (default ${defaults.servePort}; 0 picks a free one)`),
    cors: text("cors", "ORIGINS", "origins whose pages may call the API, comma-separated (default: CORS off)")
  },
  bench: {
    tasks: text(
      "tasks",
      "FILE",
      "DeepResearch Bench's query.jsonl, {id, topic, language, prompt} lines (default: its 100 tasks, shipped)"
    ),
    out: text("out", "DIR", "the run's folder: articles.jsonl, table.md, tasks/ (./deep-research-bench)"),
    ids: text("ids", "1,2,51-60", "only these task ids"),
    language: text("language", "en,zh", "only the tasks in these languages"),
    topic: text(
      "topic",
      "A,B",
      'only the tasks of these topics, as the tasks file names them ("Science & Technology")'
    ),
    limit: integer("limit", "at most this many tasks, after the filters, in the file's order"),
    parallel: integer("parallel", "tasks researched at once (2; at most 20)"),
    model: research.model,
    search: research.search,
    corpus: research.corpus,
    maxRounds: research.maxRounds,
    concurrency: research.concurrency,
    maxToolCalls: research.maxToolCalls,
    budgetTokens: integer("budget-tokens", "stop a task's research at this many tokens, then write its report"),
    budgetUsd: float("budget-usd", "stop a task's research at this cost in USD, then write its report"),
    store: research.store,
    simulate: research.simulate
  },
  worker: {
    ...workerResearch,
    host: text("host", "ADDRESS", `the address the others reach this runner at (default ${defaults.workerHost})`),
    port: integer("port", `the runner's port (default ${defaults.workerPort})`),
    listen: text("listen", "ADDRESS", "the interface to listen on (default: --host; 0.0.0.0 for all)"),
    healthPort: integer("health-port", "serve GET /health there: 200 while the runner serves, 503 starting or stopping")
  }
} as const

export type Command = keyof typeof commands

/** The commands, in the order the help lists them. */
export const commandNames: ReadonlyArray<Command> = [
  "run",
  "resume",
  "ask",
  "continue",
  "list",
  "show",
  "delete",
  "import",
  "export",
  "search",
  "evaluate",
  "mcp",
  "serve",
  "worker",
  "bench"
]

/** Whether a command's options include the role models (every command that takes `--model`). */
export const takesRoleModels = (options: Readonly<Record<string, Spec>>): boolean =>
  Object.values(options).includes(model)

/** The options of a command as the help lists them: the role models right after `--model`. */
export const listed = (options: Readonly<Record<string, Spec>>): ReadonlyArray<Spec> =>
  Object.values(options).flatMap((spec) => (spec === model ? [spec, roleModels] : [spec]))

/** Every option name a command accepts. */
export const namesOf = (command: Command): ReadonlyArray<string> => {
  const options: Readonly<Record<string, Spec>> = commands[command]
  return [
    ...Object.values(options).map((spec) => spec.name),
    ...(takesRoleModels(options) ? Defaults.roles.map((role) => roleModel(role).name) : [])
  ]
}
