/**
 * The settings that steer research (the source policy, the review of the plan, the report's language) as the research
 * configuration takes them: each from its flag, else the config file (`docs/steering.md`).
 */

/** The steering flags, as the command line gives them (lists comma-separated). */
interface Flags {
  readonly includeDomains?: string | undefined
  readonly excludeDomains?: string | undefined
  readonly since?: string | undefined
  readonly until?: string | undefined
  readonly sources?: string | undefined
  readonly review?: boolean | undefined
  readonly reportLanguage?: string | undefined
  readonly library?: boolean | undefined
}

/** The steering keys of the config file. */
interface FileConfig {
  readonly includeDomains?: ReadonlyArray<string> | undefined
  readonly excludeDomains?: ReadonlyArray<string> | undefined
  readonly since?: string | undefined
  readonly until?: string | undefined
  readonly sources?: ReadonlyArray<string> | undefined
  readonly review?: boolean | undefined
  readonly reportLanguage?: string | undefined
  readonly library?: boolean | undefined
}

const first = <A>(...values: ReadonlyArray<A | undefined>): A | undefined => values.find((v) => v !== undefined)

/**
 * A comma-separated flag as a list (`a.org, b.org` is two). An empty part is kept, for the settings to refuse: dropped,
 * `--include-domains ""` (an unset shell variable) would be no policy at all.
 */
const listOf = (text: string): ReadonlyArray<string> => text.split(",").map((part) => part.trim())

/** The source policy, the review and the report's language: each from its flag, else the config file. */
export const steeringOf = (flags: Flags, file: FileConfig | undefined): Record<string, unknown> => {
  const steering: Record<string, unknown> = {}
  const set = (key: string, value: unknown) => {
    if (value !== undefined) steering[key] = value
  }
  set("includeDomains", flags.includeDomains === undefined ? file?.includeDomains : listOf(flags.includeDomains))
  set("excludeDomains", flags.excludeDomains === undefined ? file?.excludeDomains : listOf(flags.excludeDomains))
  set("since", first(flags.since, file?.since))
  set("until", first(flags.until, file?.until))
  set("sources", flags.sources === undefined ? file?.sources : listOf(flags.sources))
  set("review", flags.review === true ? true : file?.review)
  set("reportLanguage", first(flags.reportLanguage, file?.reportLanguage))
  set("library", flags.library === true ? true : file?.library)
  return steering
}
