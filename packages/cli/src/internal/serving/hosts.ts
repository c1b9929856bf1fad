/**
 * The names a request gives of where it goes and where it comes from (its Host and Origin headers), parsed as strictly
 * as their RFCs write them: what does not parse is refused (400, 403), never guessed at.
 */

/**
 * A web origin as a browser sends it (`https://app.example`, lower case, no default port), from a text that names
 * one: a scheme, a host and maybe a port, nothing more. Undefined for anything else, which would never match.
 */
export const originOf = (text: string): string | undefined => {
  try {
    const url = new URL(text)
    const bare =
      url.pathname === "/" && url.search === "" && url.hash === "" && url.username === "" && url.password === ""
    return (url.protocol === "http:" || url.protocol === "https:") && bare && !/[?#@]/.test(text)
      ? url.origin
      : undefined
  } catch {
    return undefined
  }
}

/**
 * The host name of a Host header, as RFC 9110 has it: a name or an IPv4 address, or an IPv6 address in brackets, then
 * maybe a port; nothing else (no user info, no path). Undefined for a header that is not one.
 */
export const hostNameOf = (header: string | undefined): string | undefined => {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._~-]+))(?::(\d{1,5}))?$/.exec(header ?? "")
  if (match === null) return undefined
  const port = match[3] === undefined ? 0 : Number(match[3])
  return port > 65535 ? undefined : (match[1] ?? match[2])
}
