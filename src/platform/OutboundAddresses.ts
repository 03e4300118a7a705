/**
 * Which hosts an outbound call may not reach unless they are on
 * HTTP_URL_ALLOWLIST: the address ranges and host names of docs/outbound.md.
 * Pure functions; the guard (OutboundGuard.ts) applies them at save time and
 * again when a connection is made.
 */
import { BlockList, isIP } from "node:net"

interface Range {
  readonly name: string
  readonly list: BlockList
}

const range = (name: string, type: "ipv4" | "ipv6", subnets: ReadonlyArray<readonly [string, number]>): Range => {
  const list = new BlockList()
  for (const [address, prefix] of subnets) list.addSubnet(address, prefix, type)
  return { name, list }
}

// Ordered: the first match names the refusal (so `::1` is "loopback", not "IPv4-compatible").
const IPV4_RANGES: ReadonlyArray<Range> = [
  range("unspecified / this network (0.0.0.0/8)", "ipv4", [["0.0.0.0", 8]]),
  range("loopback (127.0.0.0/8)", "ipv4", [["127.0.0.0", 8]]),
  range("private (RFC 1918)", "ipv4", [
    ["10.0.0.0", 8],
    ["172.16.0.0", 12],
    ["192.168.0.0", 16]
  ]),
  range("carrier-grade NAT (100.64.0.0/10)", "ipv4", [["100.64.0.0", 10]]),
  range("link-local (169.254.0.0/16, cloud metadata)", "ipv4", [["169.254.0.0", 16]]),
  range("IETF protocol assignments (192.0.0.0/24)", "ipv4", [["192.0.0.0", 24]]),
  range("documentation (TEST-NET)", "ipv4", [
    ["192.0.2.0", 24],
    ["198.51.100.0", 24],
    ["203.0.113.0", 24]
  ]),
  range("benchmarking (198.18.0.0/15)", "ipv4", [["198.18.0.0", 15]]),
  range("multicast (224.0.0.0/4)", "ipv4", [["224.0.0.0", 4]]),
  range("reserved or broadcast (240.0.0.0/4)", "ipv4", [["240.0.0.0", 4]])
]

const IPV6_RANGES: ReadonlyArray<Range> = [
  range("unspecified (::)", "ipv6", [["::", 128]]),
  range("loopback (::1)", "ipv6", [["::1", 128]]),
  range("IPv4-mapped IPv6 (::ffff:0:0/96)", "ipv6", [["::ffff:0:0", 96]]),
  range("IPv4-compatible IPv6 (::/96)", "ipv6", [["::", 96]]),
  range("NAT64 (64:ff9b::/96, 64:ff9b:1::/48)", "ipv6", [
    ["64:ff9b::", 96],
    ["64:ff9b:1::", 48]
  ]),
  range("discard-only (100::/64)", "ipv6", [["100::", 64]]),
  range("documentation (2001:db8::/32)", "ipv6", [["2001:db8::", 32]]),
  range("unique local (fc00::/7)", "ipv6", [["fc00::", 7]]),
  range("link-local (fe80::/10)", "ipv6", [["fe80::", 10]]),
  range("site-local (fec0::/10)", "ipv6", [["fec0::", 10]]),
  range("multicast (ff00::/8)", "ipv6", [["ff00::", 8]])
]

/** Cloud metadata services' names; resolvable inside the cloud, never a legitimate outbound target. */
const METADATA_NAMES = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "metadata.azure.com"
])

/** Suffixes that only ever name hosts of the local network. */
const INTERNAL_SUFFIXES = [".internal", ".localhost", ".local", ".localdomain", ".home.arpa"]

/** The host as compared everywhere: lower case, without IPv6 brackets or a trailing dot. */
export const normalizeHost = (hostname: string): string =>
  hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")

/** Why an IP address is refused (the name of its range), or undefined when it is public. Not an IP: refused. */
export const blockedAddress = (address: string): string | undefined => {
  const family = isIP(address)
  if (family === 0) return "not an IP address"
  const ranges = family === 4 ? IPV4_RANGES : IPV6_RANGES
  const type = family === 4 ? "ipv4" : "ipv6"
  return ranges.find((candidate) => candidate.list.check(address, type))?.name
}

/** Why a host name (not an IP literal) is refused before any lookup, or undefined. */
export const blockedName = (host: string): string | undefined => {
  if (host === "localhost") return "a loopback name"
  if (METADATA_NAMES.has(host)) return "a cloud metadata name"
  const suffix = INTERNAL_SUFFIXES.find((candidate) => host.endsWith(candidate))
  if (suffix !== undefined) return `an internal name (*${suffix})`
  // A single label resolves through the local search domains: always an internal host.
  if (!host.includes(".")) return "a single-label (local network) name"
  return undefined
}

/** Hosts on the allowlist are compared normalized (`[::1]`, `LOCALHOST.` match `::1`, `localhost`). */
export const isAllowlisted = (host: string, allowlist: ReadonlyArray<string>): boolean =>
  allowlist.some((entry) => normalizeHost(entry) === host)
