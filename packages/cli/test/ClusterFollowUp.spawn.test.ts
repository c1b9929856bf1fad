/**
 * Follow-ups on the cluster: `serve --database URL` has no model, and a `deep-research worker` (the built CLI) runs the
 * sessions. A follow-up question POSTed to `/api/sessions/{id}/ask` is answered by the session's runner from its stored
 * sources and kept with the session, its cost under the `answer` phase; a session whose budget is spent refuses it in
 * numbers until a larger budget comes with the question; a `/v1` follow-up turn is answered there as well; `/continue`
 * goes deeper on the runner, which writes a new report version without fetching again a page the session read. The
 * database is PGlite (or the server DEEP_RESEARCH_TEST_DATABASE_URL names); the worker's models and search are the
 * emulator in this process.
 */
import { ResearchConfig, Session, UsageLedger } from "@deep-research/core"
import type { Emulator } from "@deep-research/emulator"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as OpenAiFollowUp from "../src/http/OpenAiFollowUp.js"
import * as ClusterWorld from "./support/clusterWorld.js"
import { post, request, served } from "./ServeHarness.js"
import { freePort, type Sandbox, sandbox, start } from "./support/builtCli.js"

const Started = Schema.parseJson(Schema.Struct({ sessionId: Schema.String }))
const Status = Schema.parseJson(Schema.Struct({ status: Schema.String, running: Schema.Boolean }))
const Answer = Schema.parseJson(
  Schema.Struct({
    question: Schema.String,
    markdown: Schema.String,
    covered: Schema.Boolean,
    citations: Schema.Array(Schema.Struct({ number: Schema.Number, url: Schema.String }))
  })
)
const Extract = Schema.Struct({ urls: Schema.Array(Schema.String) })

/** A worker on the database, ready; killed when the scope closes. */
const worker = (box: Sandbox, database: string) =>
  Effect.gen(function* () {
    const port = yield* Effect.promise(freePort)
    const running = yield* Effect.acquireRelease(
      Effect.sync(() =>
        start(box, [
          "worker",
          ...["--database", database, "--port", String(port)],
          ...["--model", "openai:emulated-model", "--search", "tavily", "--no-clarify"]
        ])
      ),
      (running) =>
        Effect.promise(async () => {
          running.child.kill("SIGKILL")
          await running.done
        })
    )
    for (let waited = 0; !running.output().stderr.includes("worker ready"); waited += 100) {
      if (waited > 60_000) return yield* Effect.dieMessage(`the worker never got ready:\n${running.output().stderr}`)
      yield* Effect.sleep("100 millis")
    }
    return running
  })

/** Polls the session's status over the API until it is `wanted` and not running; bounded. */
const until = (url: string, id: string, wanted: string, log: () => string) =>
  Effect.gen(function* () {
    for (let polls = 0; polls < 900; polls++) {
      const response = yield* request(`${url}/api/sessions/${id}`)
      const status = Schema.decodeUnknownSync(Status)(response.text)
      if (status.status === wanted && !status.running) return status
      yield* Effect.sleep("200 millis")
    }
    return yield* Effect.dieMessage(`session ${id} never ${wanted}:\n${log().slice(-3000)}`)
  })

/** Every URL the worker asked the search vendor to extract so far. */
const extracted = (emulator: Emulator.Handle) =>
  Effect.map(emulator.requests("tavily.extract"), (requests) =>
    requests.flatMap((r) => (Schema.is(Extract)(r.body) ? r.body.urls : []))
  )

describe("follow-ups on the cluster", () => {
  it.scopedLive(
    "the session's runner answers a question from its sources, under its budget, and goes deeper on the cluster",
    () =>
      Effect.gen(function* () {
        const world = yield* ClusterWorld.make
        const { database, emulator, store } = world
        // The serving process reads the shard locks' kind from its environment, as the worker does from its own.
        const locks = database.kind === "pglite" ? { DEEP_RESEARCH_SHARD_LOCKS: "table" } : {}
        yield* Effect.acquireRelease(
          Effect.sync(() => Object.assign(process.env, locks)),
          () => Effect.sync(() => delete process.env["DEEP_RESEARCH_SHARD_LOCKS"])
        )
        const box = sandbox(world.env)
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(box.dir, { recursive: true, force: true })))
        const runner = yield* worker(box, database.url)
        const log = () => runner.output().stderr
        const { url } = yield* served({ noClarify: true, database: database.url })

        const created = yield* post(`${url}/api/sessions`, { question: "How do ocean tides work?", maxRounds: 1 })
        assert.strictEqual(created.status, 202, created.text)
        const id = Schema.decodeUnknownSync(Started)(created.text).sessionId
        yield* until(url, id, "completed", log)
        const researched = yield* store.load(id)

        // Asked: the runner answers from the stored sources, with the session's numbers, and keeps the answer.
        const asked = yield* post(`${url}/api/sessions/${id}/ask`, {
          question: "What key figures do the sources give on tides?"
        })
        assert.strictEqual(asked.status, 200, asked.text)
        const answer = Schema.decodeUnknownSync(Answer)(asked.text)
        assert.isTrue(answer.covered)
        assert.isNotEmpty(answer.citations)
        const urls = new Set(researched.sources.map((source) => source.url))
        for (const citation of answer.citations) assert.isTrue(urls.has(citation.url), citation.url)
        assert.include(log(), `cluster: session ${id} answered a follow-up question`)
        const thread = yield* request(`${url}/api/sessions/${id}/answers`)
        assert.include(thread.text, "What key figures do the sources give on tides?")
        const answered = yield* store.load(id)
        assert.strictEqual(answered.answers.length, 1)
        const phase = answered.metrics.find((m) => m.phase === "answer")
        assert.isAbove(phase?.calls ?? 0, 0, "the answer's calls are under its own phase")
        const spent = UsageLedger.totals(answered.usage).tokens
        assert.strictEqual(spent, UsageLedger.totals(researched.usage).tokens + (phase?.totalTokens ?? 0))

        // A budget as spent as a run can leave it: the ask is refused in numbers, and the session is as it was.
        const budget = new ResearchConfig.Budget({ ...answered.config.budget, maxTokens: spent + 10 })
        yield* store.save(
          new Session.Session({
            ...answered,
            config: new ResearchConfig.ResearchConfig({ ...answered.config, budget })
          })
        )
        const refused = yield* post(`${url}/api/sessions/${id}/ask`, {
          question: "What do the sources say about tides and the moon?"
        })
        assert.strictEqual(refused.status, 409, refused.text)
        assert.include(refused.text, `The budget of ${spent + 10} tokens is exhausted`)
        assert.strictEqual((yield* store.load(id)).answers.length, 1)
        const raised = yield* post(`${url}/api/sessions/${id}/ask`, {
          question: "What do the sources say about tides and the moon?",
          budgetTokens: spent + 200_000
        })
        assert.strictEqual(raised.status, 200, raised.text)
        const afterRaise = yield* store.load(id)
        assert.strictEqual(afterRaise.answers.length, 2)
        assert.strictEqual(afterRaise.config.budget.maxTokens, spent + 200_000)

        // A /v1 follow-up turn after the report is answered by the runner too: no new session is sent.
        const turn = yield* post(`${url}/v1/chat/completions`, {
          model: "deep-research",
          messages: [
            { role: "user", content: "How do ocean tides work?" },
            { role: "assistant", content: OpenAiFollowUp.marked(researched.report?.markdown ?? "", id) },
            { role: "user", content: "What key figures do the sources give on tides and the moon?" }
          ]
        })
        assert.strictEqual(turn.status, 200, turn.text)
        assert.include(turn.text, "deep-research:session=")
        assert.strictEqual((yield* store.load(id)).answers.length, 3)
        assert.strictEqual((yield* store.list).length, 1)

        // Going deeper is a run on the cluster: a new report version, and no page the session read fetched again.
        const readBefore = yield* extracted(emulator)
        const continued = yield* post(`${url}/api/sessions/${id}/continue`, {
          direction: "Tidal energy: how much power tides can give",
          rounds: 1
        })
        assert.strictEqual(continued.status, 202, continued.text)
        yield* until(url, id, "completed", log)
        const deeper = yield* store.load(id)
        assert.strictEqual(deeper.continuations.length, 1)
        assert.strictEqual(deeper.reportVersions.length, 1)
        assert.include(log(), `cluster: session ${id} going deeper`)
        const fetchedAgain = (yield* extracted(emulator)).slice(readBefore.length).filter((u) => urls.has(u))
        assert.deepStrictEqual(fetchedAgain, [])
        const again = yield* post(`${url}/api/sessions/${id}/continue`, { direction: "  " })
        assert.strictEqual(again.status, 400, again.text)
      }),
    240_000
  )
})
