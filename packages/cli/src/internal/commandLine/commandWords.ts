/**
 * The rule that tells a mistyped command from a question. `deep-research "<question>"` runs without `run`, so a
 * first word that is not a command would otherwise be researched (with real keys, a paid run on "lsit"). The rule:
 * without `run`, a question has a question's shape (more than one word, or it ends with "?"); a single word is
 * refused as an unknown command, with the command it resembles and how to research it anyway (`run "<word>"`).
 */
import { closest, questionRule } from "./help.js"
import * as OptionTable from "./optionTable.js"

const runOptions: Readonly<Record<string, OptionTable.Spec>> = OptionTable.commands.run

/** Whether an option of `run` takes a value after it (`--max-rounds 3`), as against a flag (`--simulate`). */
const takesValue = (name: string): boolean => {
  if (name.startsWith("model-")) return true
  const spec = Object.values(runOptions).find((candidate) => candidate.name === name)
  return spec !== undefined && spec.kind !== "boolean"
}

/** The question of a run given without `run`: the first argument that is neither an option nor an option's value. */
export const questionOf = (args: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? ""
    if (arg === "--") return args[i + 1]
    if (!arg.startsWith("-")) return arg
    if (arg.startsWith("--") && !arg.includes("=") && takesValue(arg.slice(2))) i++
  }
  return undefined
}

/** Whether a text reads as a question rather than a word: several words, or a final question mark. */
export const hasQuestionShape = (text: string): boolean => {
  const trimmed = text.trim()
  return /\s/.test(trimmed) || /[?？]$/.test(trimmed)
}

/**
 * The refusal of a run given without `run` whose question is a single word, or undefined when the arguments are a
 * command or a question.
 */
export const unknownCommand = (
  args: ReadonlyArray<string>,
  commands: ReadonlyArray<string>,
  builtIns: ReadonlySet<string>
): string | undefined => {
  const [first] = args
  if (first === undefined || commands.includes(first) || builtIns.has(first)) return undefined
  const word = questionOf(args)
  if (word === undefined || word.trim() === "" || hasQuestionShape(word)) return undefined
  const suggestion = closest(word.trim().toLowerCase(), commands)
  const rest = args.filter((arg) => arg !== word)
  const anyway = ["deep-research", "run", JSON.stringify(word), ...rest].join(" ")
  return (
    `Unknown command "${word}".` +
    (suggestion === undefined ? "" : ` Did you mean: deep-research ${suggestion}?`) +
    `\n${questionRule.replace("\n", " ")}\nTo research "${word}" anyway: ${anyway}\nSee: deep-research --help`
  )
}
