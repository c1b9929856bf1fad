/**
 * How the keyless search providers say who they are. Wikimedia's User-Agent policy, OpenAlex's polite pool and NCBI's
 * E-utilities guidelines each ask a client to name itself and give a way to reach whoever runs it: the `User-Agent`
 * names the project and carries the contact the user gave (`DEEP_RESEARCH_CONTACT`, an e-mail address or a URL), else
 * the project's public page, which Wikimedia's policy accepts as a contact ("a URL of a page with contact information").
 * The project's package.json files name no repository yet: `projectPage` is the one line to change when they do, and
 * the README asks users to set their own contact meanwhile.
 */

/** The name and version the requests carry. */
export const client = "deep-research/0.1"

/**
 * The project's public page, the contact of a client that configured none: a placeholder on a reserved domain until the
 * package.json files name the repository (no stranger's address is given as ours).
 */
export const projectPage = "https://example.org/deep-research"

/** The `User-Agent` of a keyless provider, in Wikimedia's preferred form: `name/version (contact)`. */
export const userAgent = (contact: string | undefined): string => {
  const trimmed = contact?.trim() ?? ""
  return trimmed === "" ? `${client} (${projectPage}; set DEEP_RESEARCH_CONTACT to your own)` : `${client} (${trimmed})`
}

/** The contact as an e-mail address, when it is one (`mailto` and NCBI's `email` take no URL). */
export const emailOf = (contact: string | undefined): string | undefined => {
  const trimmed = contact?.trim() ?? ""
  return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(trimmed) ? trimmed : undefined
}
