/**
 * The researcher's steps, each alone: the source ledger (placing, settling, rendering), planning a turn's calls, and
 * the loop's state functions.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Ref, TestClock } from "effect"
import * as Errors from "../src/Errors.js"
import * as Turn from "../src/internal/research/researcherTurn.js"
import * as Ledger from "../src/internal/research/sourceLedger.js"
import * as LanguageModel from "../src/LanguageModel.js"
import * as Novelty from "../src/Novelty.js"
import * as Researcher from "../src/phases/Researcher.js"
import { defaults } from "../src/ResearchConfig.js"
import { Source, SourceSummary } from "../src/Source.js"
import type * as Summarizer from "../src/Summarizer.js"

const page = (n: number) =>
  `Paragraph ${n}: ` + Array.from({ length: 40 }, (_, i) => `word${(n * 97 + i * 13) % 1000}`).join(" ")

const candidate = (url: string, raw: string, title = `Title of ${url}`): Ledger.Candidate => ({
  url,
  title,
  raw,
  provider: "test",
  publishedDate: undefined
})

const known = new Source({
  id: "r1-d1-s1",
  url: "https://known.org/a",
  title: "A known source from an earlier round",
  content: page(1),
  provider: "test",
  quality: "unknown",
  retrievedAt: 5,
  directiveId: "r1-d1",
  rawLength: 100
})

const ledger = (knownSources: ReadonlyArray<Source> = []) =>
  Ledger.make({ directiveId: "r2-d1", knownSources, novelty: Novelty.optionsFromConfig(defaults), now: 1_000 })

describe("the source ledger", () => {
  it("numbers new sources from 1 and queues them for summaries", () => {
    const l = ledger()
    const pending: Array<Ledger.Pending> = []
    assert.deepStrictEqual(l.place(candidate("https://a.org/1", page(2)), "search", pending), {
      _tag: "Source",
      number: 1,
      origin: "new"
    })
    assert.deepStrictEqual(l.place(candidate("https://b.org/2", page(3)), "search", pending), {
      _tag: "Source",
      number: 2,
      origin: "new"
    })
    assert.deepStrictEqual(
      pending.map((p) => p.entry.id),
      ["r2-d1-s1", "r2-d1-s2"]
    )
  })

  it("the same URL again is a duplicate line; a fuller extracted page replaces what was read", () => {
    const l = ledger()
    const pending: Array<Ledger.Pending> = []
    l.place(candidate("https://a.org/1", "short snippet of the page"), "search", pending)
    assert.deepStrictEqual(l.place(candidate("https://a.org/1/", page(2)), "search", pending), {
      _tag: "Duplicate",
      number: 1,
      reason: "url"
    })
    assert.deepStrictEqual(l.place(candidate("https://a.org/1", page(2)), "extract", pending), {
      _tag: "Source",
      number: 1,
      origin: "page"
    })
    assert.strictEqual(pending.length, 2)
  })

  it("a source of an earlier round found again keeps its id and is not new", () => {
    const l = ledger([known])
    const line = l.place(candidate("https://mirror.org/a", page(1), known.title), "search", [])
    assert.deepStrictEqual(line, { _tag: "Source", number: 1, origin: "known" })
    const [seen] = l.seen()
    assert.strictEqual(seen?.source.id, known.id)
    assert.isFalse(seen?.isNew)
  })

  it("settling records summaries and names each new entry once; rendering shows the summary as untrusted data", () => {
    const l = ledger()
    const pending: Array<Ledger.Pending> = []
    l.fetchedAt(2_000)
    const line = l.place(candidate("https://a.org/1", page(2)), "search", pending)
    const summary = new SourceSummary({ summary: "What the page says.", excerpts: ["a verbatim line"] })
    const fresh = l.settle(pending, [{ content: Ledger.formatSummary(summary), summary }])
    assert.deepStrictEqual(
      fresh.map((e) => e.id),
      ["r2-d1-s1"]
    )
    const text = l.render([{ _tag: "Note", text: 'Results for "q":' }, line])
    assert.include(text, "[1] NEW")
    assert.include(text, "What the page says.")
    assert.include(text, 'kind="page summary"')
    assert.strictEqual(l.seen()[0]?.source.retrievedAt, 2_000)
  })
})

describe("planning a turn", () => {
  const tools = Researcher.makeTools(defaults)
  const call = (name: string, args: unknown, id = name) => new LanguageModel.ToolCall({ id, name, arguments: args })

  it("thinking comes first, searches spend the budget, and a call past it is answered without running", () => {
    const plan = Turn.plan(
      [
        call("webSearch", { queries: ["a"] }, "s1"),
        call("think", { reflection: "plan" }),
        call("webSearch", { queries: ["b"] }, "s2")
      ],
      tools,
      { used: 9, max: 10 }
    )
    assert.deepStrictEqual(
      plan.plans.map((p) => [p._tag, p.call.id]),
      [
        ["Answer", "think"],
        ["Search", "s1"],
        ["Answer", "s2"]
      ]
    )
    assert.strictEqual(plan.spent, 1)
    assert.deepStrictEqual(plan.reflections, ["plan"])
    assert.deepStrictEqual(
      plan.notices.map((n) => n.tool),
      ["think", "webSearch"]
    )
  })

  it("arguments that do not decode and unknown tools are rejected, with a notice naming the tool", () => {
    const plan = Turn.plan([call("webSearch", { queries: [] }), call("browse", {})], tools, { used: 0, max: 10 })
    assert.deepStrictEqual(
      plan.notices.map((n) => [n._tag, n.tool]),
      [
        ["Rejected", "webSearch"],
        ["Rejected", "browse"]
      ]
    )
    assert.isTrue(plan.plans.every((p) => p._tag === "Answer" && p.isError))
    assert.strictEqual(plan.spent, 0)
  })

  it("researchComplete carries the summary and completes the unit", () => {
    const plan = Turn.plan([call("researchComplete", { summary: "done [1]" })], tools, { used: 0, max: 10 })
    assert.isTrue(plan.completed)
    assert.strictEqual(plan.summary, "done [1]")
  })
})

describe("fetching and summarising a turn", () => {
  it.effect("items run all at once, their results in item order, one alone as well as none", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* Turn.forEachAtOnce([], (n: number) => Effect.succeed(n)), [])
      assert.deepStrictEqual(yield* Turn.forEachAtOnce([7], (n) => Effect.succeed(n * 2)), [14])
      // Each item waits for the last one to start: they finish only if all run at once.
      const latch = yield* Deferred.make<void>()
      const started = yield* Ref.make(0)
      const doubled = yield* Turn.forEachAtOnce([3, 1, 2], (n) =>
        Effect.gen(function* () {
          if ((yield* Ref.updateAndGet(started, (k) => k + 1)) === 3) yield* Deferred.succeed(latch, undefined)
          yield* Deferred.await(latch)
          return n * 2
        })
      )
      assert.deepStrictEqual(doubled, [6, 2, 4])
    })
  )

  const pending = (url: string, raw: string): Ledger.Pending => {
    const l = ledger()
    const waiting: Array<Ledger.Pending> = []
    l.place(candidate(url, raw), "search", waiting)
    const [item] = waiting
    if (item === undefined) throw new Error(`${url} was not placed as new`)
    return item
  }

  it.effect("short texts stand raw, failures and late summaries keep the raw text, the others are summarised", () =>
    Effect.gen(function* () {
      const config = { ...defaults, minSummarizeLength: 50, summarizationInputCap: 100 }
      const items = [
        pending("https://a.org/short", "too short"),
        pending("https://a.org/fails", page(2)),
        pending("https://a.org/late", page(3)),
        pending("https://a.org/fine", page(4))
      ]
      const summarizer: Summarizer.Service = {
        summarize: (input) =>
          input.url.endsWith("fails")
            ? Effect.fail(new Errors.ProviderUnavailable({ provider: "test", status: 500 }))
            : input.url.endsWith("late")
              ? Effect.as(Effect.sleep("10 minutes"), new SourceSummary({ summary: "late", excerpts: [] }))
              : Effect.succeed(new SourceSummary({ summary: `about ${input.content.length}`, excerpts: [] }))
      }
      const fiber = yield* Effect.fork(Turn.summarizeAll(items, summarizer, config))
      yield* TestClock.adjust(config.summarizationTimeout)
      const results = yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        results.map((result) => result.summary?.summary),
        [undefined, undefined, undefined, "about 100"]
      )
      assert.deepStrictEqual(
        results.map((result) => result.content),
        ["too short", page(2).slice(0, 100), page(3).slice(0, 100), "about 100"]
      )
    })
  )
})

describe("the researcher's state", () => {
  it("stops before a turn at the turn limit, then at the budget", () => {
    const state = Researcher.initial("task")
    assert.isUndefined(Researcher.limitReached(state, defaults))
    assert.strictEqual(Researcher.limitReached({ ...state, turns: defaults.researcherMaxTurns }, defaults), "max_turns")
    assert.strictEqual(Researcher.limitReached({ ...state, used: defaults.researcherMaxToolCalls }, defaults), "budget")
  })

  it("the budget note is joined to a trailing user message, so that turns keep alternating", () => {
    const messages = Researcher.withStatus(Researcher.initial("task"), defaults)
    assert.strictEqual(messages.length, 1)
    assert.match(messages[0]?._tag === "user" ? messages[0].content : "", /^task\n\n/)
  })
})
