/**
 * The comparable forms duplicate detection works on: a URL without what does not change the page it names (scheme,
 * `www.`, tracking parameters, the fragment), a title as its letters and digits, a text without case, copyright
 * boilerplate and runs of whitespace. Public through `Novelty`.
 */

const trackingParameter = /^(utm_[a-z_]+|fbclid|gclid|dclid|msclkid|mc_cid|mc_eid|ref_src|_hsenc|_hsmi|igshid)$/i

/**
 * The comparable form of a URL: scheme, `www.`, default port, tracking parameters and trailing slash dropped, host
 * lowercased, parameters sorted, the fragment dropped except on `file:` URLs (where it names a chunk of a document).
 */
export const normalizeUrl = (url: string): string => {
  const trimmed = url.trim()
  const match = /^(?:([a-z][a-z0-9+.-]*):)?\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?(#.*)?$/i.exec(trimmed)
  if (match === null) return trimmed.toLowerCase()
  const scheme = (match[1] ?? "").toLowerCase()
  const authority = (match[2] ?? "").replace(/^[^@]*@/, "").toLowerCase()
  const host = authority
    .replace(/:(80|443)$/, "")
    .replace(/^www\./, "")
    .replace(/\.$/, "")
  const path = (match[3] ?? "").replace(/\/{2,}/g, "/").replace(/\/+$/, "")
  const query = (match[4] ?? "")
    .split("&")
    .filter((pair) => pair !== "" && !trackingParameter.test(pair.split("=")[0] ?? ""))
    .sort()
    .join("&")
  const fragment = scheme === "file" ? (match[5] ?? "") : ""
  return `${scheme === "file" ? "file://" : ""}${host}${path}${query === "" ? "" : `?${query}`}${fragment}`
}

/** The comparable form of a title: lowercase letters and digits separated by single spaces. */
export const normalizeTitle = (title: string): string =>
  title
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim()

const copyright = /(?:copyright|©|\(c\))\s*(?:\d{4}(?:\s*[-–]\s*\d{4})?)?[^\n]{0,120}?all rights reserved\.?/gi

/** The comparable form of a text: lowercase, copyright boilerplate removed, whitespace collapsed. */
export const normalizeText = (text: string): string => {
  // NFKC is costly and changes nothing in plain ASCII, which most text is.
  const unified = nonAscii.test(text) ? text.normalize("NFKC") : text
  const lower = unified.toLowerCase()
  const cleaned = lower.includes("all rights reserved") ? lower.replace(copyright, " ") : lower
  // Only runs of whitespace or odd whitespace are rewritten; single spaces, the common case, are left alone.
  return cleaned.replace(oddWhitespace, " ").trim()
}

const nonAscii = /[^\x00-\x7f]/
const oddWhitespace = /\s{2,}|[\t\n\r\f\v\u00a0\u2000-\u200a\u2028\u2029\u3000]/g
