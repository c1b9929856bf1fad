/**
 * The queries arXiv and PubMed are sent for five real research questions, as the emulator records them. What the APIs
 * document: arXiv's `search_query` (API User's Manual, "Details of Query Construction") takes field prefixes (`all:`),
 * the Boolean `AND`, `OR` and `ANDNOT`, and phrases in double quotes; terms joined by `AND` must all be found, so the
 * paper about the whole subject ranks first. PubMed's `term` ("PubMed User Guide": search field tags, Boolean operators
 * in capitals, quoted phrases, `*` truncation) with `[tw]` (text words: title, abstract, MeSH headings, keywords). The
 * question's own words ("what is known about", "how do", "does") and the grammar's operators never reach either.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as Arxiv from "../../src/search/Arxiv.js"
import * as PubMed from "../../src/search/PubMed.js"
import { Emulator } from "@deep-research/emulator"

const questions: ReadonlyArray<{
  readonly question: string
  readonly arxiv: string
  readonly pubmed: string
}> = [
  {
    question: "What is known about the effect of vitamin D supplementation on fracture risk in older adults?",
    arxiv: 'all:"vitamin d" AND all:supplementation AND all:fracture AND all:risk AND all:older AND all:adults',
    pubmed: '"vitamin d"[tw] AND supplementation*[tw] AND fracture*[tw] AND risk[tw] AND older*[tw] AND adult*[tw]'
  },
  {
    question: "How do transformer language models perform on long-context retrieval tasks?",
    arxiv: 'all:transformer AND all:language AND all:models AND all:"long context" AND all:retrieval AND all:tasks',
    pubmed: 'transformer*[tw] AND language*[tw] AND model*[tw] AND "long context"[tw] AND retrieval*[tw] AND task*[tw]'
  },
  {
    question: "Does mindfulness-based stress reduction lower anxiety in cancer patients?",
    arxiv: 'all:"mindfulness based" AND all:stress AND all:reduction AND all:anxiety AND all:cancer AND all:patients',
    pubmed:
      '"mindfulness based"[tw] AND stress*[tw] AND reduction*[tw] AND anxiety*[tw] AND cancer*[tw] AND patient*[tw]'
  },
  {
    question: "What are the mechanisms of CRISPR-Cas9 off-target effects?",
    arxiv: 'all:mechanisms AND all:"crispr cas9" AND all:"off target"',
    pubmed: 'mechanism*[tw] AND "crispr cas9"[tw] AND "off target"[tw]'
  },
  {
    question: "Quantum error correction with surface codes: what thresholds have been achieved experimentally?",
    arxiv: "all:quantum AND all:error AND all:correction AND all:surface AND all:codes AND all:thresholds",
    pubmed: "quantum*[tw] AND error*[tw] AND correction*[tw] AND surface*[tw] AND code*[tw] AND threshold*[tw]"
  }
]

const entry: Emulator.ArxivEntry = {
  id: "2401.01234v2",
  title: "A relevant paper",
  summary: "About the subject.",
  authors: ["Ada Moreau"],
  published: "2024-01-03T18:59:59Z",
  primaryCategory: "quant-ph"
}

describe("the queries sent for real research questions", () => {
  it.scopedLive("arXiv is sent the questions' content terms, all required, phrases kept", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("arxiv.query", Emulator.arxivFeed([entry]))
      const arxiv = yield* Arxiv.make({ baseUrl: emulator.baseUrl("arxiv"), interval: Duration.millis(1) })
      for (const { question } of questions) yield* arxiv.search(question, { maxResults: 5 })
      const sent = (yield* emulator.requests("arxiv.query")).map((request) => request.query["search_query"])
      assert.deepStrictEqual(
        sent,
        questions.map((q) => q.arxiv)
      )
    })
  )

  it.scopedLive("PubMed is sent the questions in its syntax: text words, all required, phrases quoted", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("pubmed.esearch", Emulator.pubmedSearch([]))
      const pubmed = yield* PubMed.make({ baseUrl: emulator.baseUrl("pubmed") })
      for (const { question } of questions) yield* pubmed.search(question, { maxResults: 5 })
      const sent = (yield* emulator.requests("pubmed.esearch")).map((request) => request.query["term"])
      // Nothing found for all of them, each is asked again with any of its terms (OR).
      assert.deepStrictEqual(
        sent,
        questions.flatMap((q) => [q.pubmed, q.pubmed.replace(/ AND /g, " OR ")])
      )
    })
  )

  it.scopedLive("when no paper has every term, arXiv is asked again for any of them, and what that finds is kept", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.enqueue("arxiv.query", Emulator.arxivFeed([], { total: 0 }), Emulator.arxivFeed([entry]))
      const arxiv = yield* Arxiv.make({ baseUrl: emulator.baseUrl("arxiv"), interval: Duration.millis(1) })
      const [first] = questions
      const found = yield* arxiv.search(first?.question ?? "", { maxResults: 5 })
      assert.strictEqual(found[0]?.url, "https://arxiv.org/abs/2401.01234v2")
      const sent = (yield* emulator.requests("arxiv.query")).map((request) => request.query["search_query"])
      assert.deepStrictEqual(sent, [first?.arxiv, first?.arxiv.replace(/ AND /g, " OR ")])
    })
  )

  it.scopedLive("Lucene's operators and special characters in a query are neutralised, its phrases kept", () =>
    Effect.gen(function* () {
      const emulator = yield* Emulator.start()
      yield* emulator.respond("arxiv.query", Emulator.arxivFeed([entry]))
      const arxiv = yield* Arxiv.make({ baseUrl: emulator.baseUrl("arxiv"), interval: Duration.millis(1) })
      yield* arxiv.search('"graph neural networks" AND (molecules OR proteins) NOT images^2 title:foo* ~ \\ {x TO y}', {
        maxResults: 5
      })
      const [request] = yield* emulator.requests("arxiv.query")
      assert.strictEqual(
        request?.query["search_query"],
        'all:"graph neural networks" AND all:molecules AND all:proteins AND all:images AND all:title AND all:foo'
      )
    })
  )
})
