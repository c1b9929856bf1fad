/**
 * A number given for a setting, from a flag, the environment or the config file, checked the same way wherever it comes
 * from: positive, an integer where the setting counts things, and within the bound `RunSchema` publishes for it.
 */
import * as Either from "effect/Either"
import * as RunSchema from "../../RunSchema.js"
import { ConfigError } from "./backends.js"

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value.trim()

/** The settings given as numbers, by their names in the flags and the config file. */
export type NumberSetting = keyof typeof RunSchema.settingBounds

/** Why a number given for a setting (`name` says where) cannot be used, if it cannot. */
export const numberProblem = (
  name: string,
  setting: NumberSetting,
  value: number,
  given: string
): string | undefined => {
  const integer = setting !== "budgetUsd"
  const bound = RunSchema.settingBounds[setting]
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    return `${name} must be a positive ${integer ? "integer" : "number"}, got ${given}`
  }
  return value > bound ? `${name} must be at most ${bound} (got ${given})` : undefined
}

/** The number an environment variable gives for a setting: none when unset or blank; an error naming the variable. */
export const envNumber = (
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  setting: NumberSetting
): Either.Either<number | undefined, ConfigError> => {
  const raw = nonEmpty(env[name])
  if (raw === undefined) return Either.right(undefined)
  const value = Number(raw)
  const problem = numberProblem(name, setting, value, `"${raw}"`)
  return problem === undefined ? Either.right(value) : Either.left(new ConfigError({ message: problem }))
}
