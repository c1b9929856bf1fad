/**
 * A rough quality grade of a source from its URL's domain: official, academic and documentation sites high, social
 * and user-generated platforms low, the rest medium. It orders evidence; it never decides what is true.
 */
import type { SourceQuality } from "../../Source.js"

const highSuffixes = [".gov", ".edu", ".mil", ".int", ".ac.uk", ".edu.au", ".ac.jp", ".gov.uk", ".europa.eu"]
const highDomains = [
  "arxiv.org",
  "doi.org",
  "nature.com",
  "science.org",
  "sciencedirect.com",
  "springer.com",
  "link.springer.com",
  "wiley.com",
  "jstor.org",
  "ssrn.com",
  "pubmed.ncbi.nlm.nih.gov",
  "ncbi.nlm.nih.gov",
  "nih.gov",
  "who.int",
  "oecd.org",
  "worldbank.org",
  "imf.org",
  "un.org",
  "ieee.org",
  "acm.org",
  "aclanthology.org",
  "semanticscholar.org",
  "biorxiv.org",
  "medrxiv.org",
  "plos.org",
  "frontiersin.org",
  "thelancet.com",
  "nejm.org",
  "bmj.com",
  "cell.com",
  "pnas.org",
  "developer.mozilla.org",
  "w3.org",
  "ietf.org",
  "rfc-editor.org"
]
const highPrefixes = ["docs.", "developer.", "developers."]
const lowDomains = [
  "reddit.com",
  "quora.com",
  "pinterest.com",
  "facebook.com",
  "instagram.com",
  "tiktok.com",
  "twitter.com",
  "x.com",
  "linkedin.com",
  "medium.com",
  "youtube.com",
  "answers.com",
  "fandom.com"
]

const hostOf = (url: string): string | undefined => {
  const match = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^/?#:]+)/i.exec(url.trim())
  const host = match?.[1]
    ?.toLowerCase()
    .replace(/^www\./, "")
    .replace(/\.$/, "")
  return host === undefined || host === "" ? undefined : host
}

const matches = (host: string, domain: string): boolean => host === domain || host.endsWith(`.${domain}`)

/** The quality grade of a URL. */
export const qualityOfUrl = (url: string): SourceQuality => {
  const host = hostOf(url)
  if (host === undefined) return "unknown"
  if (lowDomains.some((domain) => matches(host, domain))) return "low"
  if (highDomains.some((domain) => matches(host, domain))) return "high"
  if (highSuffixes.some((suffix) => host.endsWith(suffix))) return "high"
  if (highPrefixes.some((prefix) => host.startsWith(prefix))) return "high"
  return "medium"
}

/** The domain of a URL without `www.`, or the URL itself when it has none. */
export const domainOf = (url: string): string => hostOf(url) ?? url
