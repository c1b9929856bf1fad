/** URL normalisation for comparing the sources a report lists with the sources a session retrieved. */

const trackingParameter = /^(utm_[a-z]+|fbclid|gclid|dclid|msclkid|mc_cid|mc_eid|ref_src|igshid)$/i

/**
 * A URL reduced to what identifies the page: scheme, `www.`, fragment, tracking parameters and trailing slashes are
 * dropped, the host is lowercased and the remaining query parameters are sorted. Text that is no URL is only trimmed
 * and lowercased.
 */
export const normalizeUrl = (raw: string): string => {
  const trimmed = raw.trim()
  let url: URL
  try {
    url = new URL(trimmed)
  } catch {
    return trimmed.toLowerCase()
  }
  const host = url.hostname.toLowerCase().replace(/^www\./, "")
  const port = url.port === "" ? "" : `:${url.port}`
  const path = url.pathname.replace(/\/+$/, "")
  const params = [...url.searchParams.entries()]
    .filter(([key]) => !trackingParameter.test(key))
    .sort(([a, av], [b, bv]) => (a === b ? av.localeCompare(bv) : a.localeCompare(b)))
  const query = params.length === 0 ? "" : `?${new URLSearchParams(params).toString()}`
  return `${host}${port}${path}${query}`
}

/** A title reduced for comparison: lowercase letters and digits separated by single spaces. */
export const normalizeTitle = (title: string): string =>
  title
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim()
