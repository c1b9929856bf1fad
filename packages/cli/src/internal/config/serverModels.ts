/**
 * The model of an OpenAI-compatible server (Ollama, vLLM, LM Studio, llama.cpp) when the user named none: the
 * server's `GET /models` says what it serves. One model is used, and said; several or none make a message that names
 * them and what to type.
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"

const ModelList = Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })

/** What the server's list says: the one model to use, or why none can be chosen. */
export type Discovery =
  { readonly _tag: "One"; readonly model: string } | { readonly _tag: "Unclear"; readonly message: string }

const choose = (baseUrl: string) =>
  `name the model to use with --model openai:<name> (the server at ${baseUrl} is an OpenAI-compatible server)`

/** Asks the server at `baseUrl` (with `/v1` where it has it) which models it serves; 5 s at most. */
export const discover = (baseUrl: string, apiKey: Redacted.Redacted<string> | undefined): Effect.Effect<Discovery> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(`${baseUrl.replace(/\/+$/, "")}/models`, {
        headers: apiKey === undefined ? {} : { authorization: `Bearer ${Redacted.value(apiKey)}` },
        signal
      })
      if (!response.ok) throw new Error(`it answered ${response.status} to GET /models`)
      return (await response.json()) as unknown
    },
    catch: (error) => (error instanceof Error ? error.message : String(error))
  }).pipe(
    Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "it did not answer GET /models within 5 s" }),
    Effect.flatMap((body) =>
      Effect.mapError(Schema.decodeUnknown(ModelList)(body), () => "its GET /models answer is not a model list")
    ),
    Effect.map(({ data }): Discovery => {
      const ids = [...new Set(data.map((model) => model.id))]
      const [only] = ids
      if (ids.length === 1 && only !== undefined) return { _tag: "One", model: only }
      return {
        _tag: "Unclear",
        message:
          ids.length === 0
            ? `OPENAI_BASE_URL is set but the server lists no model: ${choose(baseUrl)}.`
            : `OPENAI_BASE_URL is set and the server serves ${ids.length} models (${ids.slice(0, 8).join(", ")}${ids.length > 8 ? ", …" : ""}): ${choose(baseUrl)}.`
      }
    }),
    Effect.catchAll((reason) =>
      Effect.succeed<Discovery>({
        _tag: "Unclear",
        message: `OPENAI_BASE_URL is set, so ${choose(baseUrl)}; it could not be asked which it serves: ${reason}.`
      })
    )
  )
