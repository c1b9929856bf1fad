/**
 * A language model that answers from a script: a list of replies, or a function of the request. It records every
 * request, can fail with any provider error, stops its output at the call's limit as vendors do, and plays one or many
 * roles behind a `ModelRouter`. Part of the public testing API: users test their own programs with it.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import type { ProviderError } from "../Errors.js"
import * as LanguageModel from "../LanguageModel.js"
import * as ModelRouter from "../ModelRouter.js"
import { charactersFor, estimateTokens } from "../Tokens.js"
import { roles as allRoles, Usage } from "../Usage.js"
import type { Role } from "../Usage.js"

/** A tool call in a script; the id is made up when left out. */
export interface ScriptedToolCall {
  readonly id?: string | undefined
  readonly name: string
  readonly arguments: unknown
}

/** One scripted answer: text, tool calls (with optional text), or a provider error to fail with. */
export type Reply =
  string | { readonly text?: string | undefined; readonly toolCalls: ReadonlyArray<ScriptedToolCall> } | ProviderError

/** What a script sees of a call. */
export interface CallContext {
  /** The role the call was made in, when the model sits behind a scripted router. */
  readonly role: Role | undefined
  /** The call's number for this model, from 1. */
  readonly call: number
}

/** A script: replies in order (the last one repeats), or a function of the request. */
export type Script =
  | ReadonlyArray<Reply>
  | ((request: LanguageModel.GenerateRequest, context: CallContext) => Reply | Effect.Effect<Reply>)

/** A recorded call. */
export interface RecordedCall {
  readonly role: Role | undefined
  readonly model: string
  readonly request: LanguageModel.GenerateRequest
}

/** A text reply. */
export const text = (value: string): Reply => value

/** A JSON reply. */
export const json = (value: unknown): Reply => JSON.stringify(value)

/** A reply that calls tools. */
export const toolCalls = (...calls: ReadonlyArray<ScriptedToolCall>): Reply => ({ toolCalls: calls })

const requestText = (request: LanguageModel.GenerateRequest): string =>
  (request.system ?? "") +
  request.messages
    .map((m) =>
      m._tag === "assistant" ? m.content + m.toolCalls.map((c) => JSON.stringify(c.arguments)).join("") : m.content
    )
    .join("")

const isError = (reply: Reply): reply is ProviderError =>
  typeof reply === "object" && reply instanceof Error && "_tag" in reply

/** Options of a scripted model. */
export interface Options {
  readonly script: Script
  readonly model?: string | undefined
  readonly provider?: string | undefined
  readonly capabilities?: Partial<LanguageModel.Capabilities> | undefined
  readonly contextWindow?: number | undefined
}

/** The log of every call made to scripted models. */
export interface Log {
  readonly calls: Effect.Effect<ReadonlyArray<RecordedCall>>
  readonly record: (call: RecordedCall) => Effect.Effect<void>
}

/** The call log in context. */
export class ScriptedLog extends Context.Tag("@deep-research/core/testing/ScriptedLog")<ScriptedLog, Log>() {}

/** A fresh call log. */
export const makeLog: Effect.Effect<Log> = Effect.map(Ref.make<ReadonlyArray<RecordedCall>>([]), (ref) => ({
  calls: Ref.get(ref),
  record: (call) => Ref.update(ref, (calls) => [...calls, call])
}))

/** A scripted model that records its calls into `log`, optionally as a given role. */
export const make = (options: Options, log: Log, role?: Role): Effect.Effect<LanguageModel.Service> =>
  Effect.map(Ref.make(0), (counter) => {
    const model = options.model ?? "scripted-model"
    return LanguageModel.make({
      provider: options.provider ?? "scripted",
      model,
      capabilities: { toolCalling: true, structuredOutput: false, webSearch: false, ...options.capabilities },
      contextWindow: options.contextWindow,
      generate: (request) =>
        Effect.gen(function* () {
          const call = yield* Ref.updateAndGet(counter, (n) => n + 1)
          yield* log.record({ role, model, request })
          const script = options.script
          const reply: Reply =
            typeof script === "function"
              ? yield* Effect.suspend(() => {
                  const out = script(request, { role, call })
                  return Effect.isEffect(out) ? out : Effect.succeed(out)
                })
              : (script[Math.min(call, script.length) - 1] ?? "")
          if (isError(reply)) return yield* Effect.fail(reply)
          const value = typeof reply === "string" ? { text: reply, toolCalls: [] } : reply
          const calls = value.toolCalls.map(
            (c, i) =>
              new LanguageModel.ToolCall({ id: c.id ?? `call_${call}_${i}`, name: c.name, arguments: c.arguments })
          )
          // As a vendor does, the output stops at the call's limit: the text is cut there, and counted at the limit.
          const limit = request.maxOutputTokens
          const fullText = value.text ?? ""
          const outputTokens = estimateTokens(fullText + calls.map((c) => JSON.stringify(c.arguments)).join(""))
          const cut = limit !== undefined && outputTokens > limit
          return new LanguageModel.Completion({
            text: cut ? fullText.slice(0, charactersFor(limit, fullText)) : fullText,
            toolCalls: calls,
            finishReason: cut ? "length" : calls.length > 0 ? "tool_calls" : "stop",
            usage: new Usage({
              inputTokens: estimateTokens(requestText(request)),
              outputTokens: cut ? limit : outputTokens
            }),
            model
          })
        })
    })
  })

/** Scripts for a router: one per role, falling back to `default`. */
export interface RouterScripts {
  readonly default: Script | Options
  readonly roles?: Partial<Record<Role, Script | Options>> | undefined
}

const toOptions = (value: Script | Options): Options =>
  typeof value === "function" || Array.isArray(value) ? { script: value as Script } : (value as Options)

/**
 * A `ModelRouter` whose every role is a scripted model, plus the `ScriptedLog` of all calls (with their roles).
 * Each role gets its own call counter, so list scripts run per role.
 */
export const layerRouter = (scripts: RouterScripts): Layer.Layer<ModelRouter.ModelRouter | ScriptedLog> =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const log = yield* makeLog
      const roles = yield* Effect.forEach(allRoles, (role) =>
        Effect.map(
          make(toOptions(scripts.roles?.[role] ?? scripts.default), log, role),
          (model) => [role, model] as const
        )
      )
      const defaultModel = yield* make(toOptions(scripts.default), log)
      const models: ModelRouter.Models = {
        default: defaultModel,
        roles: Object.fromEntries(roles)
      }
      return Layer.merge(ModelRouter.layer(models), Layer.succeed(ScriptedLog, log))
    })
  )

/** A single scripted model as the `LanguageModel` in context, plus its log. */
export const layer = (options: Options): Layer.Layer<LanguageModel.LanguageModel | ScriptedLog> =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const log = yield* makeLog
      const model = yield* make(options, log)
      return Layer.merge(Layer.succeed(LanguageModel.LanguageModel, model), Layer.succeed(ScriptedLog, log))
    })
  )

/** The calls recorded so far. */
export const calls: Effect.Effect<ReadonlyArray<RecordedCall>, never, ScriptedLog> = Effect.flatMap(
  ScriptedLog,
  (log) => log.calls
)
