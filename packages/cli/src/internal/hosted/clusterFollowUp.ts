/**
 * Follow-ups on a cluster (`serve --database`, `mcp --database`): this process has no models, so both go to the
 * session's entity. An ask is a message whose reply is the answer: the runner that holds the session's shard answers
 * it from the stored sources with its models, under the session's budget, and keeps it with the session; this process
 * waits for the reply (`askWait` at most, then the question is withdrawn). A continuation is a run: sent as `Continue`,
 * researched by that runner, and followed from the store as any run is.
 */
import { Errors, type FollowUp } from "@deep-research/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { randomUUID } from "node:crypto"
import * as Cluster from "../../Cluster.js"
import { conflict, type Started } from "../../RunSchema.js"
import { type Client, loadOrQueued, notRunning, send, toCluster } from "./clusterClient.js"

/** How long an ask waits for a runner's answer before it is withdrawn. */
export const askWait = Duration.minutes(3)

/**
 * A follow-up question answered by the runner that holds the session; a session running now is a conflict, as on a
 * single server. No runner answering within `askWait` is `ProviderUnavailable`, saying so.
 */
export const ask = (client: Client, sessionId: string, question: string, budget?: FollowUp.Options["budget"]) =>
  Effect.gen(function* () {
    const session = yield* loadOrQueued(client, sessionId, "cannot answer a follow-up question")
    yield* notRunning(client, session, "cannot answer a follow-up question while it runs")
    if (question.trim() === "") return yield* new Errors.ResearchInvalidInput({ reason: "the question is empty" })
    return yield* Effect.provide(
      Cluster.ask(sessionId, question, session.answers.length, randomUUID(), budget),
      client.context
    ).pipe(
      Effect.catchTags({
        // The cluster's own failures (its storage, a malformed message): no caller can act on them.
        AlreadyProcessingMessage: Effect.die,
        MailboxFull: Effect.die,
        PersistenceError: Effect.die
      }),
      Effect.timeoutFail({
        duration: askWait,
        onTimeout: () =>
          new Errors.ProviderUnavailable({
            provider: "the cluster",
            detail:
              `no worker answered within ${Duration.toMinutes(askWait)} minutes (is a deep-research worker ` +
              "running on this database?); the question was withdrawn"
          })
      })
    )
  })

/** A finished session sent to the cluster to go deeper in `direction`; followed from the store as any run. */
export const extend = (
  client: Client,
  sessionId: string,
  direction: string,
  rounds?: number,
  budget?: FollowUp.Options["budget"]
) =>
  Effect.gen(function* () {
    const session = yield* loadOrQueued(client, sessionId, "cannot go deeper")
    yield* notRunning(client, session, "cannot go deeper while it runs")
    if (session.status !== "completed") {
      return yield* Effect.fail(conflict(sessionId, session.status, "cannot go deeper before it is completed"))
    }
    if (direction.trim() === "") return yield* new Errors.ResearchInvalidInput({ reason: "the direction is empty" })
    const message = Cluster.extend(sessionId, direction.trim(), session.continuations.length, randomUUID(), {
      rounds,
      budget
    })
    yield* send(client, sessionId, session.query, session.updatedAt, toCluster(client, message))
    return { sessionId, status: "running" } satisfies Started
  })
