/** `deep-research serve`: the HTTP API, loaded only when it runs; its own options are checked first. */
import { Command } from "@effect/cli"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as CliConfig from "../CliConfig.js"
import { Exited, usageError } from "../internal/commandLine/exited.js"
import { describeError } from "../internal/telemetry/logging.js"
import * as OptionTable from "../internal/commandLine/optionTable.js"
import * as ParserOptions from "../internal/commandLine/parserOptions.js"
import { purposeOf, resolveConfig, toFlags } from "./configuration.js"

const loadServe = Effect.promise(() => import("../Serve.js"))

const serveOptions = ParserOptions.withRoleModels(OptionTable.commands.serve)

export const serve = Command.make("serve", serveOptions, ({ cors, host: givenHost, port: givenPort, ...options }) =>
  Effect.gen(function* () {
    // What is wrong with the server's own options is said before anything about models and keys.
    const port = Option.getOrElse(givenPort, () => OptionTable.defaults.servePort)
    if (port < 0 || port > 65535) return yield* usageError(`--port must be between 0 and 65535, got ${port}`)
    const host = Option.getOrElse(givenHost, () => OptionTable.defaults.serveHost)
    const token = CliConfig.apiTokenFrom(process.env)
    const Serve = yield* loadServe
    const refused = Serve.refusal({ host, token })
    if (refused !== undefined) return yield* usageError(refused)
    const given = Option.match(cors, {
      onNone: () => [],
      onSome: (list) =>
        list
          .split(",")
          .map((origin) => origin.trim())
          .filter((origin) => origin !== "")
    })
    // A browser sends its page's origin exactly (`https://app.example`): anything else would never match, silently.
    const corsOrigins: Array<string> = []
    for (const text of given) {
      const origin = Serve.originOf(text)
      if (origin === undefined) {
        return yield* usageError(
          `--cors takes origins such as https://app.example, separated by commas; "${text}" is not one`
        )
      }
      corsOrigins.push(origin)
    }
    const flags = { ...toFlags(options), json: false, maxSessions: Option.getOrUndefined(options.maxSessions) }
    const resolved = yield* resolveConfig(flags, purposeOf(flags))
    const c = resolved.credentials
    const noModel = c.openaiApiKey === undefined && c.anthropicApiKey === undefined && c.openaiBaseUrl === undefined
    if (c.databaseUrl !== undefined && !resolved.simulate && noModel) {
      // Research runs on the workers, who bring their keys; judging a report runs here and needs a model.
      yield* Effect.sync(() =>
        process.stderr.write(
          "serve: research runs on the cluster's workers; no model key is set here (OPENAI_API_KEY, " +
            "ANTHROPIC_API_KEY or OPENAI_BASE_URL), so POST /api/sessions/{id}/evaluate answers 503.\n"
        )
      )
    }
    yield* Serve.serve(resolved, {
      ...Serve.defaults,
      host,
      port,
      token,
      corsOrigins,
      database: resolved.credentials.databaseUrl
    }).pipe(
      // The listener's own error is under the platform's (a port in use: "listen EADDRINUSE ...").
      Effect.mapError(
        (error) => new Exited({ code: 2, message: `deep-research serve cannot start: ${describeError(error)}` })
      )
    )
  })
).pipe(
  Command.withDescription(
    "Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs), an OpenAI-compatible /v1/chat/completions and " +
      "a web page at /, over the same session store as the CLI"
  )
)
