/**
 * The parser's options, made from the option table: a text or number option is optional (its default is decided
 * with the environment and the config file, not by the parser), a boolean one is a flag.
 */
import { Usage } from "@deep-research/core"
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as OptionTable from "./optionTable.js"

/** What the parser gives for an option of the table. */
export type Parsed<S> =
  S extends OptionTable.Spec<"boolean">
    ? boolean
    : S extends OptionTable.Spec<"integer" | "float">
      ? Option.Option<number>
      : Option.Option<string>

type ParsedOptions<R> = { readonly [K in keyof R]: Options.Options<Parsed<R[K]>> }

/**
 * A number option, read as the parser's own number options read it, refused in words of this program's own (the
 * parser's say "is not a integer").
 */
const numberOption = (spec: OptionTable.Spec, takes: "a whole number" | "a number") =>
  Options.text(spec.name).pipe(
    Options.mapEffect((text) => {
      const trimmed = text.trim()
      const value = Number(trimmed)
      return trimmed !== "" && Number.isFinite(value) && (takes === "a number" || Number.isInteger(value))
        ? Effect.succeed(value)
        : Effect.fail(
            ValidationError.invalidValue(HelpDoc.p(`--${spec.name} takes ${takes}, got ${JSON.stringify(text)}`))
          )
    }),
    Options.withDescription(spec.help),
    Options.optional
  )

const optionOf = (
  spec: OptionTable.Spec
): Options.Options<boolean> | Options.Options<Option.Option<number>> | Options.Options<Option.Option<string>> => {
  switch (spec.kind) {
    case "boolean":
      return Options.boolean(spec.name).pipe(Options.withDescription(spec.help))
    case "integer":
      return numberOption(spec, "a whole number")
    case "float":
      return numberOption(spec, "a number")
    case "text":
      return Options.text(spec.name).pipe(Options.withDescription(spec.help), Options.optional)
  }
}

/** The parser's options for a record of the table's options, under the same keys. */
export const optionsOf = <R extends Readonly<Record<string, OptionTable.Spec>>>(specs: R): ParsedOptions<R> => {
  const options: Record<string, ReturnType<typeof optionOf>> = {}
  for (const [key, spec] of Object.entries(specs)) options[key] = optionOf(spec)
  // Each entry was made by `optionOf` from the spec under the same key, which is what `Parsed` says of it.
  return options as unknown as ParsedOptions<R>
}

/** `--model-<role>` for every role, as one record of optional model specs. */
export const roleModels: Options.Options<{ readonly [K in Usage.Role]: Option.Option<string> }> = Options.all(
  Object.fromEntries(Usage.roles.map((role) => [role, optionsOf({ model: OptionTable.roleModel(role) }).model])) as {
    readonly [K in Usage.Role]: Options.Options<Option.Option<string>>
  }
)

/** The options of a command that takes a model, with the role models beside `--model`. */
export const withRoleModels = <R extends Readonly<Record<string, OptionTable.Spec>>>(specs: R) => ({
  ...optionsOf(specs),
  roleModels
})
