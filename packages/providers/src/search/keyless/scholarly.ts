/**
 * One paper as a search result, the same way for arXiv, OpenAlex and PubMed: the bibliographic facts (authors, year,
 * venue, preprint) go on the result as its `work`, so that the report's source list names them, and lead its snippet
 * and raw content, so that the researcher and the summariser read them with the abstract; the open-access or PDF link
 * is named in the raw content for a researcher who wants the full text (the extractor reads PDFs).
 */
import { Source } from "@deep-research/core"

/** A paper as a provider read it. */
export interface Paper {
  readonly url: string
  readonly title: string
  readonly abstract: string
  readonly work: Source.Work
  /** `YYYY-MM-DD`, `YYYY-MM` or `YYYY`, when known. */
  readonly publishedDate: string | undefined
  /** Where the full text can be read (an open-access PDF or page), when it is not `url` itself. */
  readonly fullText: string | undefined
}

const snippetCharacters = 600

const truncate = (text: string, length: number): string =>
  text.length > length ? `${text.slice(0, length).replace(/\s+\S*$/, "")}…` : text

/** Whitespace collapsed. */
export const collapse = (text: string): string => text.replace(/\s+/g, " ").trim()

/** Papers as search results of `provider`, scored by their rank. */
export const toSearchResults = (papers: ReadonlyArray<Paper>, provider: string): ReadonlyArray<Source.SearchResult> =>
  papers.map((paper, i) => {
    const facts = Source.describeWork(paper.work)
    const body = paper.abstract !== "" ? paper.abstract : "No abstract available."
    const fullText = paper.fullText !== undefined && paper.fullText !== paper.url ? `Full text: ${paper.fullText}` : ""
    const raw = [facts, paper.abstract, fullText].filter((part) => part !== "").join("\n\n")
    return new Source.SearchResult({
      url: paper.url,
      title: paper.title !== "" ? paper.title : paper.url,
      snippet: facts !== "" ? `${facts}. ${truncate(body, snippetCharacters)}` : truncate(body, snippetCharacters),
      ...(paper.abstract !== "" ? { rawContent: raw } : {}),
      score: 1 - i / Math.max(papers.length, 1),
      provider,
      ...(paper.publishedDate !== undefined ? { publishedDate: paper.publishedDate } : {}),
      work: paper.work
    })
  })
