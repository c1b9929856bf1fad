/**
 * The commands over the session store: `list`, `show`, `delete` and `import`, and the store as the other commands open it
 * before any research wiring is loaded (to find whether a session was simulated).
 */
import { Args, Command } from "@effect/cli"
import type { SessionStore, SourceLibrary } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as CliConfig from "../CliConfig.js"
import * as Store from "../Store.js"
import { loadConfigFile } from "../internal/config/configFile.js"
import { Exited } from "../internal/commandLine/exited.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import * as StoreActions from "./storeActions.js"

/** The id of a stored session, as the commands that take one read it. */
export const sessionIdArg = Args.text({ name: "id" }).pipe(
  Args.withDescription("A session id (see `deep-research list`)")
)

const storeOption = ParserOptions.optionsOf(OptionTable.commands.list)

/**
 * A session made with --simulate is resumed and evaluated simulated, without --simulate given again (it would
 * otherwise ask for a key): the store keeps a mark beside the session. A session the local store does not have is
 * said to be missing here, before a key is asked for; with a database it may be waiting for a runner.
 */
export const rememberSimulated = <F extends { readonly simulate: boolean }>(
  id: string,
  options: F & { readonly store: Option.Option<string>; readonly database: Option.Option<string> },
  doing: "resumed" | "evaluated"
) =>
  options.simulate
    ? Effect.succeed(options)
    : withStore(options, (sessions, credentials) =>
        Effect.map(Effect.either(sessions.artefact(id, Store.simulatedArtefact)), (mark) => ({
          mark,
          local: credentials.databaseUrl === undefined
        }))
      ).pipe(
        Effect.orElseSucceed(() => undefined),
        Effect.flatMap((read) => {
          if (read === undefined) return Effect.succeed(false)
          if (Either.isRight(read.mark)) return Effect.succeed(Option.isSome(read.mark.right))
          return read.local && read.mark.left._tag === "ResearchSessionNotFound"
            ? Effect.fail(new Exited({ code: 2, message: read.mark.left.message }))
            : Effect.succeed(false)
        }),
        Effect.tap((simulated) =>
          simulated
            ? Effect.sync(() =>
                process.stderr.write(
                  `[simulated] Session ${id} was made by a simulated run: it is ${doing} against the built-in ` +
                    "emulator too, with no real model or web.\n"
                )
              )
            : Effect.void
        ),
        Effect.map((simulated) => ({ ...options, simulate: simulated }))
      )

const searchOptions = ParserOptions.optionsOf(OptionTable.commands.search)

type StoreOptions = { readonly store: Option.Option<string>; readonly database: Option.Option<string> }

/** The store folder and the credentials (the database's URL among them) the options, the environment and the config file name. */
const placeOf = (options: StoreOptions) =>
  Effect.map(loadConfigFile, (file) => {
    const directory = CliConfig.storeDirOf(Option.getOrUndefined(options.store), process.env, file)
    const fromEnv = CliConfig.credentialsFrom(process.env)
    const credentials = Option.match(options.database, {
      onNone: () => fromEnv,
      onSome: (url) => ({ ...fromEnv, databaseUrl: Redacted.make(url) })
    })
    return { directory, credentials }
  })

/** Runs `f` over the session store the options, the environment and the config file name. */
export const withStore = <A, E>(
  options: StoreOptions,
  f: (sessions: SessionStore.Service, credentials: CliConfig.Credentials) => Effect.Effect<A, E>
) =>
  Effect.flatMap(placeOf(options), ({ credentials, directory }) => StoreActions.withStoreAt(directory, credentials, f))

/** Runs `f` over the library of the store (or of the database) the options name. */
const withLibrary = <A, E>(options: StoreOptions, f: (library: SourceLibrary.Service) => Effect.Effect<A, E>) =>
  Effect.flatMap(placeOf(options), ({ credentials, directory }) =>
    StoreActions.withLibraryAt(directory, credentials, f)
  )

/** `search`: the passages of every stored source that hold the words, best first. */
export const search = Command.make(
  "search",
  {
    terms: Args.text({ name: "terms" }).pipe(Args.repeated, Args.withDescription("The words to look for")),
    ...searchOptions
  },
  ({ json, limit, terms, ...where }) =>
    Effect.gen(function* () {
      const text = terms.join(" ").trim()
      const empty = StoreActions.emptyTerms(text)
      if (empty !== undefined) return yield* Effect.fail(new Exited({ code: 2, message: empty }))
      const most = Option.getOrUndefined(limit)
      if (most !== undefined && (!Number.isInteger(most) || most < 1 || most > 200)) {
        return yield* Effect.fail(new Exited({ code: 2, message: "error: --limit takes a whole number from 1 to 200" }))
      }
      return yield* withLibrary(where, (library) => StoreActions.search(library, text, most, json))
    })
).pipe(
  Command.withDescription(
    "Search the library: the passages of every stored session's sources that hold all the words, best first, with " +
      "their session, title and URL (--json: one JSON line each)"
  )
)

/** `list`: every session of the store, one line each under a header (--json: one JSON line each). */
export const list = Command.make("list", storeOption, ({ json, ...where }) =>
  withStore(where, (sessions, credentials) => StoreActions.list(sessions, credentials, json))
).pipe(
  Command.withDescription(
    "List sessions: id, status (and whether the report rests on no source), created, cost, question ([simulated] for a " +
      "simulated run's; --json: one JSON line each)"
  )
)

/** `show`: a session and its report. */
export const show = Command.make(
  "show",
  { id: sessionIdArg, ...ParserOptions.optionsOf(OptionTable.commands.show) },
  ({ id, json, version, ...where }) =>
    withStore(where, (sessions, credentials) =>
      StoreActions.show(sessions, credentials, id, json, Option.getOrUndefined(version))
    )
).pipe(
  Command.withDescription(
    "Show a session, its report and its follow-up answers (--report-version N: an earlier report; --json: the whole session)"
  )
)

/** `delete`: a session and its files, and its messages in a cluster's database. */
export const remove = Command.make("delete", { id: sessionIdArg, ...storeOption }, ({ id, json: _json, ...where }) =>
  withStore(where, (sessions, credentials) => StoreActions.remove(sessions, credentials, id))
).pipe(Command.withDescription("Delete a session and its files"))

/** `import`: the sessions of another store's database brought into this store. */
export const importStore = Command.make(
  "import",
  {
    from: Args.text({ name: "FILE|DIR" }).pipe(
      Args.withDescription("Another store's deep-research.db, or the store folder holding it")
    ),
    ...storeOption
  },
  ({ from, json, ...where }) =>
    Effect.flatMap(placeOf(where), ({ credentials, directory }) =>
      StoreActions.withStoreAt(directory, credentials, (sessions) =>
        StoreActions.importFrom(sessions, Store.storePlace(directory, credentials), from, json)
      )
    )
).pipe(Command.withDescription("Bring another store's sessions into this store (how a store moves to PostgreSQL)"))
