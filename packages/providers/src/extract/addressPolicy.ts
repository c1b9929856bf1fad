/**
 * Which network addresses the HTTP extractor may connect to. Web pages are untrusted: a page (or a redirect, or a
 * DNS answer) must not make us read loopback services, the private network or a cloud metadata endpoint. IPv4 is
 * parsed the way URL parsers and `inet_aton` do (decimal, octal, hex, shortened forms) so that no spelling slips
 * through, and IPv6 addresses that embed an IPv4 address (mapped, NAT64, 6to4) are judged by that address.
 */

// =============================================================================
// Parsing
// =============================================================================

const parseIPv4Part = (part: string): number | undefined => {
  if (part === "") return undefined
  if (/^0[xX][0-9a-fA-F]*$/.test(part)) return part.length === 2 ? 0 : parseInt(part.slice(2), 16)
  if (/^0[0-7]+$/.test(part)) return parseInt(part.slice(1), 8)
  if (/^(0|[1-9][0-9]*)$/.test(part)) return parseInt(part, 10)
  return undefined
}

/**
 * Parses an IPv4 address in any form a URL parser accepts (`127.0.0.1`, `2130706433`, `0177.0.0.1`, `0x7f.1`,
 * `127.1`) into its 32-bit value, or `undefined` when the text is not an IPv4 address.
 */
export const parseIPv4 = (text: string): number | undefined => {
  const parts = text.endsWith(".") ? text.slice(0, -1).split(".") : text.split(".")
  if (parts.length === 0 || parts.length > 4) return undefined
  const numbers: Array<number> = []
  for (const part of parts) {
    const value = parseIPv4Part(part)
    if (value === undefined || !Number.isFinite(value)) return undefined
    numbers.push(value)
  }
  const last = numbers[numbers.length - 1] ?? 0
  const leading = numbers.slice(0, -1)
  if (leading.some((n) => n > 255)) return undefined
  if (last >= 256 ** (5 - numbers.length)) return undefined
  return leading.reduce((acc, n, i) => acc + n * 256 ** (3 - i), 0) + last
}

/** Formats a 32-bit IPv4 value as a dotted quad. */
export const formatIPv4 = (value: number): string =>
  [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join(".")

/**
 * Parses an IPv6 address (with or without brackets, a zone id, or an IPv4 tail) into its eight 16-bit groups, or
 * `undefined` when the text is not an IPv6 address.
 */
export const parseIPv6 = (text: string): ReadonlyArray<number> | undefined => {
  let address = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text
  const zone = address.indexOf("%")
  if (zone >= 0) address = address.slice(0, zone)
  if (!address.includes(":")) return undefined
  let tail: Array<number> = []
  const lastColon = address.lastIndexOf(":")
  const maybeIPv4 = address.slice(lastColon + 1)
  if (maybeIPv4.includes(".")) {
    if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(maybeIPv4)) return undefined
    const octets = maybeIPv4.split(".").map((n) => parseInt(n, 10))
    if (octets.some((n) => n > 255)) return undefined
    tail = [(octets[0] ?? 0) * 256 + (octets[1] ?? 0), (octets[2] ?? 0) * 256 + (octets[3] ?? 0)]
    const before = address.slice(0, lastColon + 1)
    // keep a "::" that precedes the IPv4 tail, drop a single separating ":"
    address = before.endsWith("::") ? before : before.slice(0, -1)
  }
  const halves = address.split("::")
  if (halves.length > 2) return undefined
  const parseGroups = (s: string): Array<number> | undefined => {
    if (s === "") return []
    const groups: Array<number> = []
    for (const g of s.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined
      groups.push(parseInt(g, 16))
    }
    return groups
  }
  const head = parseGroups(halves[0] ?? "")
  if (head === undefined) return undefined
  if (halves.length === 1) {
    const groups = [...head, ...tail]
    return groups.length === 8 ? groups : undefined
  }
  const rest = parseGroups(halves[1] ?? "")
  if (rest === undefined) return undefined
  const known = head.length + rest.length + tail.length
  if (known > 7) return undefined
  return [...head, ...new Array<number>(8 - known).fill(0), ...rest, ...tail]
}

// =============================================================================
// Classification
// =============================================================================

interface IPv4Range {
  readonly base: number
  readonly bits: number
  readonly reason: string
}

const v4 = (cidr: string, reason: string): IPv4Range => {
  const [address = "", bits = "32"] = cidr.split("/")
  return { base: parseIPv4(address) ?? 0, bits: parseInt(bits, 10), reason }
}

// Most specific first: the metadata address sits inside link-local and should be named as such.
const blockedIPv4: ReadonlyArray<IPv4Range> = [
  v4("169.254.169.254/32", "a cloud metadata address"),
  v4("255.255.255.255/32", "the broadcast address"),
  v4("0.0.0.0/8", "an unspecified address"),
  v4("10.0.0.0/8", "a private address"),
  v4("100.64.0.0/10", "a carrier-grade NAT address"),
  v4("127.0.0.0/8", "a loopback address"),
  v4("169.254.0.0/16", "a link-local address"),
  v4("172.16.0.0/12", "a private address"),
  v4("192.0.0.0/24", "a reserved address"),
  v4("192.0.2.0/24", "a documentation address"),
  v4("192.168.0.0/16", "a private address"),
  v4("198.18.0.0/15", "a benchmarking address"),
  v4("198.51.100.0/24", "a documentation address"),
  v4("203.0.113.0/24", "a documentation address"),
  v4("224.0.0.0/4", "a multicast address"),
  v4("240.0.0.0/4", "a reserved address")
]

const inRange = (value: number, range: IPv4Range): boolean => {
  const size = 2 ** (32 - range.bits)
  return Math.floor(value / size) === Math.floor(range.base / size)
}

/** Why an IPv4 address (as a 32-bit value) is refused, or `undefined` for a public address. */
export const classifyIPv4 = (value: number): string | undefined =>
  blockedIPv4.find((range) => inRange(value, range))?.reason

const embeddedIPv4 = (high: number, low: number): number => high * 65536 + low

/** Why an IPv6 address (as eight groups) is refused, or `undefined` for a public address. */
export const classifyIPv6 = (groups: ReadonlyArray<number>): string | undefined => {
  const g = (i: number): number => groups[i] ?? 0
  const zeroUpTo = (n: number): boolean => groups.slice(0, n).every((x) => x === 0)
  if (groups.every((x) => x === 0)) return "an unspecified address"
  if (zeroUpTo(7) && g(7) === 1) return "a loopback address"
  // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (translated) reach the IPv4 address behind them
  if (zeroUpTo(5) && g(5) === 0xffff) return classifyIPv4(embeddedIPv4(g(6), g(7)))
  if (zeroUpTo(4) && g(4) === 0xffff && g(5) === 0) return classifyIPv4(embeddedIPv4(g(6), g(7)))
  if (zeroUpTo(6)) return "an IPv4-compatible address"
  if (g(0) === 0x64 && g(1) === 0xff9b && groups.slice(2, 6).every((x) => x === 0)) {
    return classifyIPv4(embeddedIPv4(g(6), g(7)))
  }
  if (g(0) === 0x64 && g(1) === 0xff9b && g(2) === 1) return "a local NAT64 address"
  if (g(0) === 0x2002) return classifyIPv4(embeddedIPv4(g(1), g(2)))
  if (g(0) === 0x2001 && g(1) === 0) return "a Teredo tunnel address"
  if (g(0) === 0x2001 && g(1) === 0xdb8) return "a documentation address"
  if (g(0) === 0x100 && g(1) === 0 && g(2) === 0 && g(3) === 0) return "a discard address"
  if (g(0) === 0xfd00 && g(1) === 0xec2 && groups.slice(2, 7).every((x) => x === 0) && g(7) === 0x254) {
    return "a cloud metadata address"
  }
  if ((g(0) & 0xfe00) === 0xfc00) return "a unique-local address"
  if ((g(0) & 0xffc0) === 0xfe80) return "a link-local address"
  if ((g(0) & 0xffc0) === 0xfec0) return "a site-local address"
  if ((g(0) & 0xff00) === 0xff00) return "a multicast address"
  return undefined
}

/**
 * Why an IP address (IPv4 in any spelling, or IPv6) may not be fetched, or `undefined` when it is public. Text that
 * is not an IP address at all is refused too: the caller must resolve names first.
 */
export const addressBlockReason = (address: string): string | undefined => {
  const ipv4 = parseIPv4(address)
  if (ipv4 !== undefined) return classifyIPv4(ipv4)
  const ipv6 = parseIPv6(address)
  if (ipv6 !== undefined) return classifyIPv6(ipv6)
  return "not an IP address"
}

/** True for loopback, private, link-local, CGNAT, multicast, unspecified, broadcast, reserved and metadata addresses. */
export const isPrivateAddress = (address: string): boolean => addressBlockReason(address) !== undefined

/** The host part of a URL without brackets, the trailing dot or upper case. */
export const normalizeHostname = (hostname: string): string => {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname
  return (bare.endsWith(".") ? bare.slice(0, -1) : bare).toLowerCase()
}

const blockedNames: ReadonlyMap<string, string> = new Map([
  ["metadata.google.internal", "a cloud metadata host"],
  ["metadata.goog", "a cloud metadata host"],
  ["metadata", "a cloud metadata host"],
  ["instance-data", "a cloud metadata host"],
  ["localhost", "a loopback host"]
])

/** Why a host name is refused before any DNS lookup (metadata services, `localhost`), or `undefined`. */
export const hostnameBlockReason = (hostname: string): string | undefined => {
  const name = normalizeHostname(hostname)
  const named = blockedNames.get(name)
  if (named !== undefined) return named
  if (name.endsWith(".localhost")) return "a loopback host"
  return undefined
}

/** The address a host names literally (an IP in any spelling), canonical, or `undefined` for a DNS name. */
export const literalAddress = (hostname: string): { readonly address: string; readonly family: 4 | 6 } | undefined => {
  const name = normalizeHostname(hostname)
  const ipv4 = parseIPv4(name)
  if (ipv4 !== undefined) return { address: formatIPv4(ipv4), family: 4 }
  const ipv6 = parseIPv6(name)
  if (ipv6 !== undefined) return { address: ipv6.map((x) => x.toString(16)).join(":"), family: 6 }
  return undefined
}
