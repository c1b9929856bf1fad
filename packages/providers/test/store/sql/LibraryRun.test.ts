/**
 * A run that starts from the library (`library: true`), scripted end to end over the SQLite store: a page an earlier
 * session read enters the new run as a known source before any search, is cited in its report and marked with the
 * session it came from, and is never searched for or fetched again (the new run's web does not even hold it).
 */
import { Pipeline, ResearchEvents, type Session, Summarizer } from "@deep-research/core"
import { ScriptedModel, ScriptedRun, StaticWeb } from "@deep-research/core/testing"
import { ContentExtractor, SearchProvider } from "@deep-research/core"
import { SqlSessionStore } from "@deep-research/providers"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"

const perovskite: StaticWeb.Page = {
  url: "https://example.org/perovskite",
  title: "Perovskite tandem cells",
  content: "Perovskite on silicon tandem cells reached a record efficiency of 33.9 percent in 2023."
}
const silicon: StaticWeb.Page = {
  url: "https://example.org/silicon",
  title: "Silicon cells",
  content: "Crystalline silicon cells alone hold an efficiency record of 26.8 percent."
}

/** What the web of a run was asked: every query and the URLs it returned, every URL extracted. */
interface WebLog {
  readonly queries: Array<string>
  readonly returned: Array<string>
  readonly extracted: Array<string>
}

/** A scripted run over a web of `pages` that records what it is asked, on the store in context. */
const scriptedWeb = (script: ScriptedRun.Script, log: WebLog) =>
  Layer.mergeAll(
    Layer.provideMerge(Summarizer.layer, ScriptedModel.layerRouter(ScriptedRun.scripts(script))),
    Layer.unwrapEffect(
      Effect.map(StaticWeb.make({ pages: script.pages }), ({ extractor, search }) =>
        Layer.merge(
          Layer.succeed(SearchProvider.SearchProvider, {
            ...search,
            search: (query, options) =>
              Effect.tap(search.search(query, options), (results) =>
                Effect.sync(() => {
                  log.queries.push(query)
                  log.returned.push(...results.map((result) => result.url))
                })
              )
          }),
          Layer.succeed(ContentExtractor.ContentExtractor, {
            ...extractor,
            extract: (urls) =>
              Effect.zipRight(
                Effect.sync(() => log.extracted.push(...urls)),
                extractor.extract(urls)
              )
          })
        )
      )
    ),
    ResearchEvents.layer
  )

describe("a run with the library", () => {
  it.scoped("cites a source of an earlier session, marked with it, without searching for or fetching it", () =>
    Effect.gen(function* () {
      const folder = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-library-run-"))),
        (path) => Effect.sync(() => fs.rmSync(path, { recursive: true, force: true }))
      )
      const store = SqlSessionStore.layerSqlite(nodePath.join(folder, "deep-research.db"))
      const config = { allowClarification: false }
      const firstLog: WebLog = { queries: [], returned: [], extracted: [] }
      const first: Session.Session = yield* Pipeline.research("How efficient are perovskite solar cells?", {
        config
      }).pipe(
        Effect.provide(
          scriptedWeb(
            {
              pages: [perovskite],
              rounds: [[{ topic: "Perovskite cell efficiency records", queries: ["perovskite efficiency"] }]],
              report: "# Perovskite\n\nTandems reached 33.9 percent [1]."
            },
            firstLog
          )
        ),
        Effect.provide(store)
      )
      assert.strictEqual(first.status, "completed")
      assert.deepStrictEqual(firstLog.returned, [perovskite.url])

      const log: WebLog = { queries: [], returned: [], extracted: [] }
      const script: ScriptedRun.Script = {
        // The new run's web holds the other page only: the earlier page can come from the library alone.
        pages: [silicon],
        brief: "Compare the efficiency records of perovskite tandem cells and silicon cells.",
        rounds: [
          [
            {
              topic: "Efficiency records of solar cells",
              queries: ["silicon efficiency record"],
              findings: "Perovskite tandems reached 33.9 percent [1]; silicon alone 26.8 percent [2]."
            }
          ]
        ],
        report: "# Records\n\nPerovskite tandems reached 33.9 percent [1]. Silicon cells reach 26.8 percent [2]."
      }
      const calls = yield* Effect.gen(function* () {
        const second = yield* Pipeline.research("Which solar cells hold the efficiency records?", {
          config: { ...config, library: true }
        })
        return { second, calls: yield* ScriptedRun.calls }
      }).pipe(Effect.provide(scriptedWeb(script, log)), Effect.provide(store))
      const { second } = calls
      assert.strictEqual(second.status, "completed")
      const fromLibrary = second.sources.find((source) => source.url === perovskite.url)
      assert.strictEqual(fromLibrary?.origin?.sessionId, first.id)
      const cited = second.report?.citations.find((citation) => citation.url === perovskite.url)
      assert.strictEqual(cited?.fromSession, first.id)
      assert.include(second.report?.markdown ?? "", `(from session ${first.id})`)
      assert.isDefined(second.report?.citations.find((citation) => citation.url === silicon.url))
      // Never asked of the web: no query returned it, no extraction read it.
      assert.notInclude(log.returned, perovskite.url)
      assert.notInclude(log.extracted, perovskite.url)
      assert.deepStrictEqual(log.queries, ["silicon efficiency record"])
      // The researcher was shown it with its assignment, before its first search.
      const researcher = calls.calls.find((call) => call.role === "researcher")
      const assignment = researcher?.request.messages[0]?.content ?? ""
      assert.include(assignment, `FROM THE LIBRARY (session ${first.id})`)
      assert.include(assignment, "33.9 percent")
      // The supervisor plans knowing what is in hand.
      const supervisor = calls.calls.find((call) => call.role === "supervisor")
      assert.include(supervisor?.request.messages[0]?.content ?? "", "Already in hand: 1 source from earlier research")
    })
  )

  it.scoped("a run without the library starts afresh, whatever the library holds", () =>
    Effect.gen(function* () {
      const folder = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-library-run-"))),
        (path) => Effect.sync(() => fs.rmSync(path, { recursive: true, force: true }))
      )
      const store = SqlSessionStore.layerSqlite(nodePath.join(folder, "deep-research.db"))
      const config = { allowClarification: false }
      const pages = [perovskite]
      const unused: WebLog = { queries: [], returned: [], extracted: [] }
      yield* Pipeline.research("How efficient are perovskite solar cells?", { config }).pipe(
        Effect.provide(scriptedWeb({ pages, rounds: [["Perovskite cell efficiency records"]] }, unused)),
        Effect.provide(store)
      )
      const second = yield* Pipeline.research("How efficient are perovskite solar cells?", { config }).pipe(
        Effect.provide(scriptedWeb({ pages: [silicon], rounds: [["Perovskite cell efficiency records"]] }, unused)),
        Effect.provide(store)
      )
      assert.isTrue(second.sources.every((source) => source.origin === undefined))
      assert.notInclude(
        second.sources.map((source) => source.url),
        perovskite.url
      )
    })
  )

  it.scoped(
    "under a source policy, a library source outside it is left out and recorded as a search result would be",
    () =>
      Effect.gen(function* () {
        const folder = yield* Effect.acquireRelease(
          Effect.sync(() => fs.mkdtempSync(nodePath.join(os.tmpdir(), "deep-research-library-run-"))),
          (path) => Effect.sync(() => fs.rmSync(path, { recursive: true, force: true }))
        )
        const store = SqlSessionStore.layerSqlite(nodePath.join(folder, "deep-research.db"))
        const unused: WebLog = { queries: [], returned: [], extracted: [] }
        const rounds = [["Perovskite cell efficiency records"]]
        yield* Pipeline.research("How efficient are perovskite solar cells?", {
          config: { allowClarification: false }
        }).pipe(Effect.provide(scriptedWeb({ pages: [perovskite], rounds }, unused)), Effect.provide(store))
        const second = yield* Pipeline.research("How efficient are perovskite solar cells?", {
          config: { allowClarification: false, library: true, excludeDomains: ["example.org"] }
        }).pipe(Effect.provide(scriptedWeb({ pages: [], rounds }, unused)), Effect.provide(store))
        assert.notInclude(
          second.sources.map((source) => source.url),
          perovskite.url
        )
        assert.deepStrictEqual(
          second.sourcePolicyRemovals?.urls.map((removal) => [removal.url, removal.reason]),
          [[perovskite.url, "excluded_domain"]]
        )
      })
  )
})
