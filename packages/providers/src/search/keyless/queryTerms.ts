/**
 * The content of a researcher's query, for the scholarly APIs whose search is a query language rather than free text
 * (arXiv's Lucene `search_query`, PubMed's `term`): question words and stop words out, every operator and special
 * character of the query language neutralised (so a question cannot become a malformed query or an error feed),
 * quoted phrases kept whole, and a short token (`vitamin D`, `type 2`, `COVID 19`) kept with the word before it as a
 * phrase. Each API's provider combines the terms in its own syntax.
 */

/** One term: a word, or a phrase of several. */
export interface Term {
  readonly words: ReadonlyArray<string>
}

/** The most terms a combined query takes; the first ones, which questions put their subject in. */
export const maxTerms = 6

// Function words, and the words of a question or a research request that say nothing of its subject.
const stopWords: ReadonlySet<string> = new Set(
  (
    "a an the and or not nor but if then than so as of in on at by for from to into onto with without within about " +
    "over under between among through during before after above below up down out off again further once " +
    "is are was were be been being am do does did doing done have has had having can could may might must shall " +
    "should will would it its it's this that these those there here such same other another any some all each " +
    "both either neither few more most less least many much very too also only own just even still yet ever " +
    "i me my we our you your he she they them their his her us what which who whom whose when where why how " +
    "whether vs versus via per etc e.g i.e " +
    "known know knowing current currently latest recent recently new state evidence literature research researches " +
    "study studies studied review reviews overview summary summarize summarise explain explained describe tell " +
    "find show shows shown give list compare compared comparison difference differences effect effects impact " +
    "impacts role influence influences affect affects relationship association associated between best good " +
    "perform performs performance work works use used using way ways lower raise reduce reduces increase " +
    "increases improve improves help helps cause causes " +
    "anything something everything thing things"
  ).split(/\s+/)
)

// Operators of the query languages, spelled as words.
const operatorWords: ReadonlySet<string> = new Set(["and", "or", "not", "andnot", "to"])

// Lucene's special characters (arXiv) and PubMed's field, truncation and grouping marks: each splits words.
const special = /[+\-&|!(){}[\]^"~*?:\\/.,;'`<>=#@$%]/g

const wordsOf = (text: string): ReadonlyArray<string> =>
  text
    .replace(special, " ")
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word !== "")

/**
 * The content terms of a query, in their order, duplicates out: quoted phrases whole, the other words without stop
 * words and operators, a token of one or two characters joined to the word before it.
 */
export const contentTerms = (query: string): ReadonlyArray<Term> => {
  const terms: Array<Term> = []
  const seen = new Set<string>()
  const add = (words: ReadonlyArray<string>) => {
    const key = words.join(" ")
    if (words.length === 0 || seen.has(key)) return
    seen.add(key)
    terms.push({ words })
  }
  // Quoted phrases and the text between them, in order.
  const parts = query.split(/"([^"]*)"/)
  parts.forEach((part, index) => {
    if (index % 2 === 1) return add(wordsOf(part))
    // A hyphenated word is one phrase ("mindfulness-based", "off-target").
    const hyphenated = part.replace(/([\p{L}\p{N}]+(?:-[\p{L}\p{N}]+)+)/gu, (word) => ` \u0001${word}\u0001 `)
    const tokens = hyphenated.split(/\s+/).filter((token) => token !== "")
    let previous: Array<string> | undefined
    for (const token of tokens) {
      if (token.startsWith("\u0001")) {
        const words = wordsOf(token.replace(/\u0001/g, ""))
        add(words)
        previous = undefined
        continue
      }
      const words = wordsOf(token)
      // Only a token of letters and digits alone joins the word before it: `images^2` is a boost, not `images 2`.
      const plain = /^[\p{L}\p{N}]+[?!.,;:]?$/u.test(token)
      for (const word of words) {
        if (operatorWords.has(word) || stopWords.has(word)) {
          previous = undefined
          continue
        }
        if (word.length <= 2 && previous !== undefined && plain && words.length === 1) {
          // `vitamin D`, `type 2`: the short token names the thing with the word before it.
          const joined = [...previous, word]
          seen.delete(previous.join(" "))
          const at = terms.findIndex((term) => term.words.join(" ") === previous?.join(" "))
          if (at >= 0) terms.splice(at, 1)
          add(joined)
          previous = undefined
          continue
        }
        if (word.length <= 1) {
          previous = undefined
          continue
        }
        const single = [word]
        add(single)
        previous = single
      }
    }
  })
  return terms
}
