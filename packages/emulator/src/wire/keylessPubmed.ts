/**
 * PubMed's E-utilities as the emulator serves them ("E-utilities In-Depth": ESearch JSON, EFetch XML): an `esearch`
 * answer (its ERROR answer included) and an `efetch` `PubmedArticleSet` as real EFetch XML has it, journal articles
 * with the reference lists that name other works' DOIs and PMC ids, and book records (`PubmedBookArticle`) of the
 * NCBI Bookshelf, for tests to script and the simulated world to use.
 */
import { escapeXml, json, xml } from "./keyless.js"
import type { Reply } from "./types.js"

// =============================================================================
// PubMed (E-utilities In-Depth: ESearch JSON, EFetch XML of PubmedArticleSet)
// =============================================================================

/** An esearch answer listing `ids`. */
export const pubmedSearch = (ids: ReadonlyArray<string>, options?: { readonly count?: number }): Reply =>
  json({
    header: { type: "esearch", version: "0.3" },
    esearchresult: {
      count: String(options?.count ?? ids.length),
      retmax: String(ids.length),
      retstart: "0",
      idlist: ids,
      translationset: [],
      querytranslation: '"search"[All Fields]'
    }
  })

/** An esearch answer refusing the query, as NCBI writes it into the result (HTTP 200). */
export const pubmedSearchError = (message: string): Reply =>
  json({ header: { type: "esearch", version: "0.3" }, esearchresult: { ERROR: message } })

/** A PubMed record as the scripted efetch gives it. */
export interface PubmedArticle {
  readonly pmid: string
  readonly title: string
  /** Sections of a structured abstract, each with its label; one unlabelled section for a plain one. */
  readonly abstract: ReadonlyArray<{ readonly label?: string | undefined; readonly text: string }>
  readonly authors: ReadonlyArray<{ readonly last: string; readonly fore: string }>
  readonly journal: string
  readonly year: number
  readonly month?: string | undefined
  readonly doi?: string | undefined
  readonly pmc?: string | undefined
  readonly publicationTypes?: ReadonlyArray<string> | undefined
  /**
   * The works it cites, as real EFetch XML lists them under `PubmedData/ReferenceList`, each with its own DOI, PubMed
   * and PMC ids; two made-up references by default, so that a reader taking every `ArticleId` meets them.
   */
  readonly references?: ReadonlyArray<PubmedReference> | undefined
}

/** A reference of a PubMed record. */
export interface PubmedReference {
  readonly citation: string
  readonly doi?: string | undefined
  readonly pmid?: string | undefined
  readonly pmc?: string | undefined
}

/** A book record (`PubmedBookArticle`: a chapter of StatPearls, GeneReviews or another Bookshelf book). */
export interface PubmedBook {
  readonly kind: "book"
  readonly pmid: string
  /** The Bookshelf accession (`NBK430685`). */
  readonly accession: string
  readonly bookTitle: string
  /** The `book` attribute of `BookTitle` and `ArticleTitle` (`statpearls`, `gene`). */
  readonly bookId: string
  readonly publisher: string
  /** The chapter's title; a whole book has none. */
  readonly chapterTitle?: string | undefined
  readonly abstract: ReadonlyArray<{ readonly label?: string | undefined; readonly text: string }>
  readonly authors: ReadonlyArray<{ readonly last: string; readonly fore: string }>
  readonly editors?: ReadonlyArray<{ readonly last: string; readonly fore: string }> | undefined
  readonly year: number
  readonly references?: ReadonlyArray<PubmedReference> | undefined
}

const defaultReferences = (pmid: string): ReadonlyArray<PubmedReference> => [
  {
    citation: "Moreau A, Sato K. An earlier cohort of the same question. Lancet. 2015;385:1-9.",
    doi: `10.1016/S0140-6736(15)${pmid.slice(-5)}-1`,
    pmid: String(Number(pmid) - 7_000_000),
    pmc: `PMC${4_000_000 + (Number(pmid) % 1_000_000)}`
  },
  { citation: "Fischer L. A review cited by this record. BMJ. 2017;356:j1.", doi: "10.1136/bmj.j1" }
]

const referenceList = (references: ReadonlyArray<PubmedReference>): ReadonlyArray<string> =>
  references.length === 0
    ? []
    : [
        "<ReferenceList>",
        ...references.map((reference) =>
          [
            `<Reference><Citation>${escapeXml(reference.citation)}</Citation>`,
            reference.doi === undefined && reference.pmid === undefined && reference.pmc === undefined
              ? ""
              : "<ArticleIdList>" +
                (reference.doi === undefined ? "" : `<ArticleId IdType="doi">${escapeXml(reference.doi)}</ArticleId>`) +
                (reference.pmid === undefined ? "" : `<ArticleId IdType="pubmed">${reference.pmid}</ArticleId>`) +
                (reference.pmc === undefined ? "" : `<ArticleId IdType="pmc">${escapeXml(reference.pmc)}</ArticleId>`) +
                "</ArticleIdList>",
            "</Reference>"
          ].join("")
        ),
        "</ReferenceList>"
      ]

const abstractXml = (parts: ReadonlyArray<{ readonly label?: string | undefined; readonly text: string }>) => [
  "<Abstract>",
  ...parts.map((part) =>
    part.label === undefined
      ? `<AbstractText>${escapeXml(part.text)}</AbstractText>`
      : `<AbstractText Label="${escapeXml(part.label)}" NlmCategory="${escapeXml(part.label)}">${escapeXml(part.text)}</AbstractText>`
  ),
  "</Abstract>"
]

const authorXml = (author: { readonly last: string; readonly fore: string }) =>
  `<Author ValidYN="Y"><LastName>${escapeXml(author.last)}</LastName><ForeName>${escapeXml(author.fore)}</ForeName>` +
  `<Initials>${author.fore.slice(0, 1)}</Initials></Author>`

/** A `PubmedBookArticle` as EFetch gives it: the chapter in `BookDocument`, the book in `Book`, editors apart. */
const pubmedBook = (book: PubmedBook): string =>
  [
    "<PubmedBookArticle>",
    `<BookDocument><PMID Version="1">${book.pmid}</PMID>`,
    `<ArticleIdList><ArticleId IdType="bookaccession">${escapeXml(book.accession)}</ArticleId></ArticleIdList>`,
    `<Book><Publisher><PublisherName>${escapeXml(book.publisher)}</PublisherName>` +
      "<PublisherLocation>Treasure Island (FL)</PublisherLocation></Publisher>",
    `<BookTitle book="${escapeXml(book.bookId)}">${escapeXml(book.bookTitle)}</BookTitle>`,
    `<PubDate><Year>${book.year}</Year><Month>01</Month></PubDate>`,
    `<BeginningDate><Year>${book.year - 8}</Year><Month>01</Month></BeginningDate><Medium>Internet</Medium></Book>`,
    ...(book.chapterTitle === undefined
      ? []
      : [
          `<LocationLabel Type="chapter">${escapeXml(book.chapterTitle)}</LocationLabel>`,
          `<ArticleTitle book="${escapeXml(book.bookId)}" part="article-${book.pmid}">${escapeXml(book.chapterTitle)}</ArticleTitle>`
        ]),
    "<Language>eng</Language>",
    '<AuthorList Type="authors">',
    ...book.authors.map(authorXml),
    "</AuthorList>",
    ...((book.editors ?? []).length === 0
      ? []
      : ['<AuthorList Type="editors">', ...(book.editors ?? []).map(authorXml), "</AuthorList>"]),
    '<PublicationType UI="D016454">Review</PublicationType>',
    ...abstractXml(book.abstract),
    "<Sections><Section><SectionTitle>Introduction</SectionTitle></Section></Sections>",
    ...referenceList(book.references ?? defaultReferences(book.pmid)),
    "</BookDocument>",
    "<PubmedBookData><History>" +
      `<PubMedPubDate PubStatus="pubmed"><Year>${book.year}</Year><Month>1</Month><Day>1</Day></PubMedPubDate>` +
      "</History><PublicationStatus>ppublish</PublicationStatus>",
    `<ArticleIdList><ArticleId IdType="pubmed">${book.pmid}</ArticleId></ArticleIdList>`,
    "</PubmedBookData>",
    "</PubmedBookArticle>"
  ].join("\n")

const pubmedArticle = (article: PubmedArticle): string =>
  [
    "<PubmedArticle>",
    `<MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">${article.pmid}</PMID>`,
    `<Article PubModel="Print-Electronic"><Journal><ISSN IssnType="Electronic">1234-5678</ISSN>`,
    `<JournalIssue CitedMedium="Internet"><Volume>12</Volume><Issue>3</Issue><PubDate><Year>${article.year}</Year>` +
      `${article.month === undefined ? "" : `<Month>${article.month}</Month>`}</PubDate></JournalIssue>`,
    `<Title>${escapeXml(article.journal)}</Title><ISOAbbreviation>${escapeXml(article.journal)}</ISOAbbreviation></Journal>`,
    `<ArticleTitle>${escapeXml(article.title)}</ArticleTitle>`,
    ...abstractXml(article.abstract),
    '<AuthorList CompleteYN="Y">',
    ...article.authors.map(authorXml),
    "</AuthorList><Language>eng</Language>",
    "<PublicationTypeList>",
    ...(article.publicationTypes ?? ["Journal Article"]).map(
      (type) => `<PublicationType UI="D016428">${escapeXml(type)}</PublicationType>`
    ),
    "</PublicationTypeList></Article></MedlineCitation>",
    "<PubmedData><PublicationStatus>ppublish</PublicationStatus><ArticleIdList>",
    `<ArticleId IdType="pubmed">${article.pmid}</ArticleId>`,
    ...(article.doi === undefined ? [] : [`<ArticleId IdType="doi">${escapeXml(article.doi)}</ArticleId>`]),
    ...(article.pmc === undefined ? [] : [`<ArticleId IdType="pmc">${escapeXml(article.pmc)}</ArticleId>`]),
    "</ArticleIdList>",
    ...referenceList(article.references ?? defaultReferences(article.pmid)),
    "</PubmedData>",
    "</PubmedArticle>"
  ].join("\n")

/** An efetch answer (`retmode=xml`): a `PubmedArticleSet` with its DOCTYPE. */
export const pubmedArticles = (articles: ReadonlyArray<PubmedArticle | PubmedBook>): Reply =>
  xml(
    [
      '<?xml version="1.0" ?>',
      '<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">',
      "<PubmedArticleSet>",
      ...articles.map((record) => ("kind" in record ? pubmedBook(record) : pubmedArticle(record))),
      "</PubmedArticleSet>",
      ""
    ].join("\n"),
    "text/xml; charset=UTF-8"
  )
