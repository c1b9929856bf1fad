import { CliConfig, Command, HelpDoc } from "@effect/cli"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import { assert, describe, it } from "@effect/vitest"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { optionNames, resumeCommand, root, subcommands } from "../src/Commands.js"
import { commandHelp, quickAnswer, rootHelp } from "../src/internal/commandLine/help.js"
import { hasQuestionShape, questionOf, unknownCommand } from "../src/internal/commandLine/commandWords.js"
import { parsePlain } from "../src/internal/commandLine/storeCommandLine.js"
import { builtInOptions, normalizeArgs, unknownOption } from "../src/main.js"

const packages = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")

/**
 * The project's source modules an entry loads from the start (its static imports, followed through the project's
 * own), and the other modules they import. Type-only imports are gone from the built modules and are left out.
 */
const staticGraph = (entry: string) => {
  // A specifier of the project's own as the source file it names; undefined for anything else.
  const sourceOf = (from: string, specifier: string): string | undefined => {
    if (specifier.startsWith(".")) return path.resolve(path.dirname(from), specifier).replace(/\.js$/, ".ts")
    const own = /^@deep-research\/([a-z]+)\/(.+)$/.exec(specifier)
    if (own === null) return undefined
    // Where the package's exports name the subpath (`./dist/x/Y.js`), its source is `src/x/Y.ts`.
    const manifest = JSON.parse(readFileSync(path.join(packages, own[1] ?? "", "package.json"), "utf8"))
    const target: unknown = manifest.exports?.[`./${own[2]}`]?.default
    return typeof target === "string"
      ? path.join(packages, own[1] ?? "", target.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"))
      : path.join(packages, own[1] ?? "", "src", `${own[2]}.ts`)
  }
  const seen = new Set<string>()
  const foreign = new Set<string>()
  const visit = (file: string): void => {
    if (seen.has(file)) return
    seen.add(file)
    const text = readFileSync(file, "utf8")
    for (const [, specifier] of text.matchAll(/^import (?!type )[^"]*"([^"]+)"/gm)) {
      if (specifier === undefined) continue
      const source = sourceOf(file, specifier)
      if (source === undefined) foreign.add(specifier)
      else visit(source)
    }
  }
  visit(path.join(packages, entry))
  return { foreign, seen }
}

describe("main", () => {
  it("a question in first position runs it", () => {
    assert.deepStrictEqual(normalizeArgs(["What is X?", "--json"]), ["run", "What is X?", "--json"])
    assert.deepStrictEqual(normalizeArgs(["--simulate", "What is X?"]), ["run", "--simulate", "What is X?"])
  })

  it("a single word where a command goes is refused as a mistyped command, naming the one it resembles", () => {
    const builtIns = new Set(["--help", "--version"])
    const typo = unknownCommand(["lsit", "--simulate"], subcommands, builtIns)
    assert.include(typo, 'Unknown command "lsit". Did you mean: deep-research list?')
    assert.include(typo, 'To research "lsit" anyway: deep-research run "lsit" --simulate')
    assert.include(
      unknownCommand(["--simulate", "--max-rounds", "2", "shwo"], subcommands, builtIns),
      "deep-research show?"
    )
    const unlike = unknownCommand(["frobnicate"], subcommands, builtIns)
    assert.include(unlike, 'Unknown command "frobnicate".')
    assert.notInclude(unlike, "Did you mean")
    // Questions, and any word given to `run` itself, are researched.
    for (const args of [
      ["What is X?"],
      ["photosynthesis?"],
      ["heat pumps", "--json"],
      ["run", "lsit"],
      ["--model", "openai:o3", "Why is the sky blue"]
    ])
      assert.isUndefined(unknownCommand(args, subcommands, builtIns), args.join(" "))
    assert.strictEqual(questionOf(["--model-report", "openai:o3", "--simulate", "--out=x", "word"]), "word")
    assert.isFalse(hasQuestionShape(" word "))
    assert.include(rootHelp, "a single word is taken for a mistyped command")
  })

  it("subcommands and built-in options are left as they are", () => {
    assert.deepStrictEqual(normalizeArgs(["list", "--json"]), ["list", "--json"])
    assert.deepStrictEqual(normalizeArgs(["--version"]), ["--version"])
  })

  it("an unknown option is named with the known option it resembles", () => {
    const message = unknownOption(["run", "--max-round", "3", "What is X?"])
    assert.include(message, "Unknown option --max-round for deep-research run")
    assert.include(message, "Did you mean --max-rounds?")
  })

  it("an option of another command is unknown, and nothing is suggested when nothing is close", () => {
    const message = unknownOption(["list", "--frobnicate"])
    assert.include(message, "Unknown option --frobnicate for deep-research list")
    assert.notInclude(message, "Did you mean")
  })

  it("known options, --name=value forms and arguments after -- pass", () => {
    assert.isUndefined(unknownOption(["run", "--max-rounds=3", "--model-report", "openai:o3", "--help", "q"]))
    assert.isUndefined(unknownOption(["run", "--", "--not-an-option"]))
  })
})

describe("resumeCommand", () => {
  it("repeats the flags that wire models, search, corpus and store, quoted for the shell", () => {
    const command = resumeCommand("dr-1", {
      model: "openai:gpt-4.1",
      modelRoles: { summarization: "openai:gpt-4.1-mini" },
      search: "tavily,exa",
      corpus: "/tmp/my notes",
      store: "/tmp/store",
      simulate: true,
      maxRounds: 3
    })
    assert.strictEqual(
      command,
      "deep-research resume dr-1 --model openai:gpt-4.1 --model-summarization openai:gpt-4.1-mini --search tavily,exa " +
        "--corpus '/tmp/my notes' --store /tmp/store --simulate"
    )
  })
})

describe("quickAnswer", () => {
  it("no arguments or --help give the overview; <command> --help that command's help", () => {
    assert.strictEqual(quickAnswer([]), rootHelp)
    assert.strictEqual(quickAnswer(["-h"]), rootHelp)
    assert.strictEqual(quickAnswer(["resume", "--help"]), commandHelp["resume"])
    assert.strictEqual(quickAnswer(["What is X?", "--simulate", "-h"]), commandHelp["run"])
  })

  it("anything else, and --help after --, is left to the parser", () => {
    assert.isUndefined(quickAnswer(["What is X?"]))
    assert.isUndefined(quickAnswer(["run", "--", "--help"]))
  })

  it("is answered from modules that load nothing but Node's own: no Effect, no SDK", () => {
    const { foreign, seen } = staticGraph("cli/src/internal/commandLine/help.ts")
    assert.isAbove(seen.size, 2)
    assert.deepStrictEqual(
      [...foreign].filter((specifier) => !specifier.startsWith("node:")),
      [],
      `modules of the help's: ${[...seen].map((file) => path.relative(packages, file)).join(", ")}`
    )
  })
})

describe("list, show and delete", () => {
  it("load the session store and what prints, not the parser, the servers, the cluster, a provider or core's pipeline (its index)", () => {
    const { foreign, seen } = staticGraph("cli/src/internal/commandLine/storeCommandLine.ts")
    const loaded = [...seen].map((file) => path.relative(packages, file))
    assert.include(loaded, "cli/src/commands/storeActions.ts")
    for (const heavy of [
      "cli/src/main.ts",
      "cli/src/Commands.ts",
      "cli/src/Wiring.ts",
      "cli/src/Serve.ts",
      "cli/src/Cluster.ts",
      "cli/src/CliConfig.ts"
    ])
      assert.notInclude(loaded, heavy)
    assert.deepStrictEqual(
      [...foreign].filter((specifier) =>
        /^(@effect\/cli|@effect\/platform-node\/(NodeContext|NodeHttp)|@opentelemetry|openai|@anthropic-ai|@tavily|pg$|@deep-research\/core$)/.test(
          specifier
        )
      ),
      []
    )
  })

  it("are sent to their bundled entry by a module that loads nothing but Node's own", () => {
    const { foreign, seen } = staticGraph("cli/src/internal/commandLine/quickBundle.ts")
    assert.deepStrictEqual(
      [...seen].map((file) => path.relative(packages, file)),
      ["cli/src/internal/commandLine/quickBundle.ts"]
    )
    assert.deepStrictEqual(
      [...foreign].filter((specifier) => !specifier.startsWith("node:")),
      []
    )
  })

  it("take their plain forms, and leave the rest to the whole command line", () => {
    assert.deepStrictEqual(parsePlain(["list", "--json", "--store", "/s"]), {
      command: "list",
      id: undefined,
      store: "/s",
      json: true
    })
    assert.deepStrictEqual(parsePlain(["show", "dr-1", "--store=/s"]), {
      command: "show",
      id: "dr-1",
      store: "/s",
      json: false
    })
    for (const args of [
      ["list", "--bogus"],
      ["show"],
      ["delete", "a", "b"],
      ["list", "--database", "postgres://x"],
      ["run", "x y"]
    ])
      assert.isUndefined(parsePlain(args), args.join(" "))
  })
})

describe("the CLI's modules", () => {
  it("load no OpenTelemetry SDK until the environment asks for an export, no PostgreSQL driver until a database is named (SQLite is the store)", () => {
    const { foreign, seen } = staticGraph("cli/src/main.ts")
    assert.isAbove(seen.size, 20)
    // The exporters' module is there to be loaded, and is not among those loaded from the start.
    assert.isTrue(existsSync(path.join(packages, "cli/src/internal/telemetry/otlpExporters.ts")))
    assert.isFalse(seen.has(path.join(packages, "cli/src/internal/telemetry/otlpExporters.ts")))
    assert.deepStrictEqual(
      [...foreign].filter((specifier) =>
        /^(@opentelemetry\/|@effect\/opentelemetry|pg$|pg\/|postgres$|@effect\/sql-pg)/.test(specifier)
      ),
      []
    )
  })
})

describe("the option table", () => {
  const optionsInParser = (command: string): ReadonlyArray<string> => {
    const descriptor = HashMap.get(Command.getSubcommands(root), command)
    assert.isTrue(Option.isSome(descriptor), command)
    const help = Option.isSome(descriptor)
      ? HelpDoc.toAnsiText(Descriptor.getHelp(descriptor.value, CliConfig.defaultConfig))
      : ""
    const names = [...help.matchAll(/--([a-z][a-z-]*)/g)].map((match) => match[1] ?? "")
    return [...new Set(names)].filter((name) => !builtInOptions.includes(name)).sort()
  }

  it("the parser of each command takes exactly the options the table names for it", () => {
    for (const command of subcommands) {
      assert.deepStrictEqual(optionsInParser(command), [...(optionNames[command] ?? [])].sort(), command)
    }
  })

  it("each command's help lists every option the command takes", () => {
    for (const command of subcommands) {
      const help = commandHelp[command] ?? ""
      for (const name of optionNames[command] ?? []) {
        const listed = help.includes(`--${name}`) || (name.startsWith("model-") && help.includes("--model-<role>"))
        assert.isTrue(listed, `deep-research ${command} --help lists --${name}`)
      }
    }
  })
})
