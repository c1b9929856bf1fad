/**
 * How long reading a keyless search answer holds the event loop (issue 51): a hostile arXiv answer nested 100,000
 * levels deep, a real-sized PubMed `efetch` of 50 records with their reference lists, the same at 2 MB, and an OpenAlex
 * answer at its 1 MB limit (the provider's whole path, and `JSON.parse` alone). For the XML, the DOM parser the providers used before (linkedom, one synchronous call) and
 * the streaming parse they use now (htmlparser2 fed 64 KB slices, the event loop served between slices) through the
 * providers' own `Arxiv.readFeed` / `PubMed.readArticles`. The hold is the longest gap a `setImmediate` ticker saw
 * while the read ran: what every other session, the health check and the web page of `serve` wait at most, in wall
 * time and in this process's CPU time. Each figure is the worst of 5 runs (the DOM parser's deep document: one run). Usage: node bench/dist/keylessParse.js
 */
import { Arxiv, OpenAlex, PubMed } from "@deep-research/providers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Effect from "effect/Effect"
import { DOMParser } from "linkedom"
import { performance } from "node:perf_hooks"

const repeats = 5

const reference = (k: number) =>
  `<Reference><Citation>Author ${k} et al. A cited paper. J Things. 2010;1:${k}.</Citation><ArticleIdList>` +
  `<ArticleId IdType="doi">10.1000/ref.${k}</ArticleId><ArticleId IdType="pubmed">${1000 + k}</ArticleId>` +
  `<ArticleId IdType="pmc">PMC${2000 + k}</ArticleId></ArticleIdList></Reference>`

const record = (i: number) =>
  `<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">${30_000_000 + i}</PMID>` +
  `<Article PubModel="Print"><Journal><JournalIssue><PubDate><Year>2021</Year><Month>Mar</Month></PubDate>` +
  `</JournalIssue><Title>Journal of Things</Title></Journal><ArticleTitle>Vitamin D and fractures, record ${i}` +
  `</ArticleTitle><Abstract>${Array.from(
    { length: 5 },
    (_, k) => `<AbstractText Label="PART${k}">${"Older adults were followed for fractures. ".repeat(9)}</AbstractText>`
  ).join("")}</Abstract><AuthorList>${Array.from(
    { length: 8 },
    (_, k) => `<Author><LastName>Author${k}</LastName><ForeName>Ana</ForeName><Initials>A</Initials></Author>`
  ).join("")}</AuthorList><PublicationTypeList><PublicationType>Journal Article</PublicationType>` +
  `</PublicationTypeList></Article></MedlineCitation><PubmedData><ArticleIdList>` +
  `<ArticleId IdType="pubmed">${30_000_000 + i}</ArticleId><ArticleId IdType="doi">10.1/x.${i}</ArticleId>` +
  `</ArticleIdList><ReferenceList>${Array.from({ length: 40 }, (_, k) => reference(k)).join("")}</ReferenceList>` +
  `</PubmedData></PubmedArticle>`

const pubmedSet = (records: number) =>
  `<?xml version="1.0" ?>\n<PubmedArticleSet>\n${Array.from({ length: records }, (_, i) => record(i)).join("\n")}\n</PubmedArticleSet>\n`

const levels = 100_000
const deepFeed = `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">${"<a>".repeat(levels)}${"</a>".repeat(levels)}</feed>`

const openalexAnswer = (bytes: number) => {
  const work = (i: number) => ({
    id: `https://openalex.org/W${i}`,
    doi: `https://doi.org/10.1/w.${i}`,
    display_name: `Work ${i} on heat pumps`,
    publication_year: 2023,
    publication_date: "2023-06-12",
    type: "article",
    authorships: Array.from({ length: 6 }, (_, k) => ({ author: { display_name: `Author ${k}` } })),
    primary_location: {
      landing_page_url: `https://example.org/${i}`,
      source: { display_name: "Energy", type: "journal" }
    },
    abstract_inverted_index: Object.fromEntries(
      Array.from({ length: 220 }, (_, k) => [`word${k}x${i % 7}`, [k, k + 220]])
    )
  })
  const results: Array<unknown> = []
  let size = 0
  while (size < bytes) {
    const next = work(results.length)
    size += JSON.stringify(next).length + 1
    results.push(next)
  }
  return JSON.stringify({ meta: { count: results.length }, results })
}

/**
 * The longest the event loop went unserved while `run` ran, as wall time and as this process's CPU time between two
 * turns (on a shared machine the wall time includes the moments the process was not scheduled at all; the CPU time is
 * the work one turn did), and how long the whole read took.
 */
const hold = async (
  run: () => Promise<unknown>
): Promise<{ readonly holdMs: number; readonly holdCpuMs: number; readonly totalMs: number }> => {
  let longest = 0
  let longestCpu = 0
  let last = performance.now()
  let lastCpu = process.cpuUsage()
  let ticking = true
  const tick = () => {
    const now = performance.now()
    const cpu = process.cpuUsage(lastCpu)
    longest = Math.max(longest, now - last)
    longestCpu = Math.max(longestCpu, (cpu.user + cpu.system) / 1000)
    last = now
    lastCpu = process.cpuUsage()
    if (ticking) setImmediate(tick)
  }
  setImmediate(tick)
  const start = performance.now()
  await run()
  const totalMs = performance.now() - start
  ticking = false
  await new Promise((resolve) => setImmediate(resolve))
  return { holdMs: longest, holdCpuMs: longestCpu, totalMs }
}

const worst = async (run: () => Promise<unknown>, times = repeats) => {
  const runs = []
  for (let i = 0; i < times; i++) runs.push(await hold(run))
  const round = (n: number) => Math.round(n * 10) / 10
  return {
    holdMs: round(Math.max(...runs.map((r) => r.holdMs))),
    holdCpuMs: round(Math.max(...runs.map((r) => r.holdCpuMs))),
    totalMs: round(Math.max(...runs.map((r) => r.totalMs)))
  }
}

const answer = (text: string) => ({ status: 200, headers: {}, text })
const linkedom = (text: string) => async () => new DOMParser().parseFromString(text, "text/xml").documentElement
const megabytes = (text: string) => Math.round((Buffer.byteLength(text) / (1024 * 1024)) * 100) / 100

const main = async () => {
  const small = pubmedSet(50)
  const large = pubmedSet(170)
  const ids = Array.from({ length: 170 }, (_, i) => String(30_000_000 + i))
  const json = openalexAnswer(1024 * 1024 - 64 * 1024)
  // OpenAlex's whole path (the body read as it streams, parsed, each work decoded) over a client answering the body.
  const client = HttpClient.make((request) =>
    Effect.succeed(
      HttpClientResponse.fromWeb(request, new Response(json, { headers: { "content-type": "application/json" } }))
    )
  )
  const openalex = OpenAlex.make({ httpClient: client })
  const figures = {
    deepFeed: {
      megabytes: megabytes(deepFeed),
      before: await worst(linkedom(deepFeed), 1),
      now: await worst(() => Effect.runPromise(Effect.either(Arxiv.readFeed("arxiv", answer(deepFeed)))))
    },
    pubmed50: {
      megabytes: megabytes(small),
      before: await worst(linkedom(small)),
      now: await worst(() => Effect.runPromise(PubMed.readArticles("pubmed", answer(small), ids.slice(0, 50))))
    },
    pubmed170: {
      megabytes: megabytes(large),
      before: await worst(linkedom(large)),
      now: await worst(() => Effect.runPromise(PubMed.readArticles("pubmed", answer(large), ids)))
    },
    openalex1MB: {
      megabytes: megabytes(json),
      jsonParse: await worst(async () => JSON.parse(json)),
      now: await worst(() => Effect.runPromise(openalex.search("heat pumps", { maxResults: 50 })))
    }
  }
  console.log(JSON.stringify(figures, null, 2))
}

void main()
