/**
 * A typed client of `deep-research serve` for Effect programs, made from the same `HttpApi` declaration as the server:
 * every endpoint is a method, its payload and answers decoded by the same schemas.
 *
 * ```ts
 * const client = yield* Client.make({ baseUrl: "http://127.0.0.1:8787" })
 * const { sessionId } = yield* client.sessions.create({ payload: { question: "How do tides work?" } })
 * ```
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { Api } from "./Api.js"

/** Where the server is, and its API token when it asks for one. */
export interface Options {
  readonly baseUrl: string
  readonly token?: Redacted.Redacted<string> | string | undefined
}

/** The client: `client.sessions.create(...)`, `client.system.health()`, `client.openai.chatCompletions(...)`. */
export type Client = Effect.Effect.Success<ReturnType<typeof make>>

/** Makes a client over the `HttpClient` in context (e.g. `FetchHttpClient.layer`). */
export const make = (options: Options) =>
  HttpApiClient.make(Api, {
    baseUrl: options.baseUrl,
    transformClient: (client) => {
      const token = options.token
      if (token === undefined) return client
      const value = typeof token === "string" ? token : Redacted.value(token)
      return HttpClient.mapRequest(client, HttpClientRequest.bearerToken(value))
    }
  })
