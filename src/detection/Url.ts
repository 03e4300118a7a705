/**
 * URLs (with a scheme, including `hxxp` and `mailto:`) and bare domains
 * (a known top-level domain, or defanged: `evil[.]com`, `evil[dot]com`),
 * checked against allow and deny lists of domains (a listed domain covers
 * its subdomains). Runs over the raw text, its folded view (fullwidth,
 * homoglyphs, zero-width) and its decoded spans.
 */
import { eachMatch, FindingSet } from "./Findings.js"
import { eachImageUrl } from "./ImageUrls.js"
import { type TextViews, viewsOf } from "./Normalize.js"
import type { Finding } from "./Types.js"

export interface UrlOptions {
  /** Domains that are fine; when given, every other domain is reported. */
  readonly allow?: ReadonlyArray<string>
  /** Domains always reported (category `denied_domain`), even when also allowed. */
  readonly deny?: ReadonlyArray<string>
  /** Only URLs a renderer fetches by itself (markdown images, HTML `<img>`): the exfiltration channel. */
  readonly images_only?: boolean
}

const SCHEME_URL = /(?<![A-Za-z0-9+.-])(?:https?|hxxps?|ftps?|wss?|sftp):\/\/[^\s<>"'`)\]]{1,2048}/gi
const MAILTO = /(?<![A-Za-z0-9])mailto:[^\s<>"'`)]{3,512}/gi
/** Top-level domains a bare domain may end in: common generic and country ones, not file extensions (py, sh, md, js). */
const TLDS =
  "com|org|net|io|ai|dev|app|co|uk|de|fr|ru|cn|jp|in|br|es|it|nl|eu|info|biz|xyz|me|us|ca|au|gov|edu|ly|site|online|top|shop|store|help|gg|tv|cc|link|click|live|news|tech|cloud|ws|su|tk|ml|ga|cf|ch|at|be|se|no|dk|fi|ie|kr|mx|ar|tr|ua|za|ir|pk|bd|vn|id|my|ph|sg|hk|tw|nz|ro|cz|hu|gr|pt|il|sa|ae|eg|ng|ke|to|live|lol|win|vip|bid|icu|buzz|example|test|onion"
const LABEL_SEPARATOR = String.raw`(?:\.|\[\.\]|\(\.\)|\[dot\]|\(dot\))`
/** A defanged domain (`evil[.]com`, `evil[dot]example`); only looked for when the text has such a separator. */
const DEFANGED_DOMAIN = new RegExp(
  String.raw`(?<![\w.@/\\:-])(?:[a-z0-9-]{1,63}${LABEL_SEPARATOR}){1,10}(?:${TLDS})(?![\w-]|\.[a-z0-9])(?::\d{2,5})?(?:/[^\s<>"'\x60)\]]{0,2048})?`,
  "gi"
)
const HAS_DEFANG = /\[\.\]|\(\.\)|\[dot\]|\(dot\)/i
/** A known top-level domain after a dot: where a bare domain ends (a literal "." first, so the scan is quick). */
const TLD_END = new RegExp(String.raw`\.(?:${TLDS})(?![\w-]|\.[a-z0-9])`, "gi")
const AFTER_DOMAIN = /(?::\d{2,5})?(?:\/[^\s<>"'`)\]]{0,2048})?/y
const isHostCode = (code: number) =>
  (code >= 0x30 && code <= 0x39) || ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a) || code === 0x2d || code === 0x2e
/** What may not stand right before a bare domain: it would be part of an e-mail, a path or an identifier. */
const isDomainPrefixCode = (code: number) =>
  code === 0x5f || code === 0x40 || code === 0x2f || code === 0x5c || code === 0x3a

/** Bare domains: from each known top-level domain back to the start of the host name, then the port and path. */
const eachBareDomain = (text: string, report: (at: number, match: string) => void) => {
  let lastEnd = -1
  TLD_END.lastIndex = 0
  for (let m = TLD_END.exec(text); m !== null; m = TLD_END.exec(text)) {
    let start = m.index
    while (start > 0 && isHostCode(text.charCodeAt(start - 1))) start--
    while (start < m.index && text.charCodeAt(start) === 0x2e) start++
    if (start >= m.index || start < lastEnd || (start > 0 && isDomainPrefixCode(text.charCodeAt(start - 1)))) continue
    AFTER_DOMAIN.lastIndex = m.index + m[0].length
    const end = m.index + m[0].length + (AFTER_DOMAIN.exec(text)?.[0].length ?? 0)
    lastEnd = end
    report(start, text.slice(start, end))
  }
}
const DEFANG = /\[\.\]|\(\.\)|\[dot\]|\(dot\)/gi
const TRAILING_PUNCTUATION = /[.,;:!?'"]+$/

const normaliseHost = (host: string) => host.replace(DEFANG, ".").toLowerCase().replace(/\.$/, "")

/** The host of a URL with a scheme: after `//`, without user info and port. */
const hostOfUrl = (url: string) => {
  const authorityStart = url.indexOf("//") + 2
  let authorityEnd = url.length
  for (let i = authorityStart; i < url.length; i++) {
    const char = url[i]
    if (char === "/" || char === "?" || char === "#" || char === "\\") {
      authorityEnd = i
      break
    }
  }
  const authority = url.slice(authorityStart, authorityEnd)
  const hostAndPort = authority.slice(authority.lastIndexOf("@") + 1)
  if (hostAndPort.startsWith("[")) return hostAndPort.slice(0, hostAndPort.indexOf("]") + 1)
  return normaliseHost(hostAndPort.replace(/:\d*$/, ""))
}

const hostOfBare = (match: string) => normaliseHost(match.replace(/[:/].*$/, ""))

const domainListed = (host: string, domains: ReadonlyArray<string>) =>
  domains.some((domain) => {
    const listed = domain.toLowerCase().replace(/^\*?\./, "")
    return host === listed || host.endsWith("." + listed)
  })

type Verdict = { readonly category: string; readonly message: string } | undefined

const verdictFor = (host: string, options: UrlOptions): Verdict => {
  if (host.length === 0) return undefined
  if (options.deny !== undefined && domainListed(host, options.deny))
    return { category: "denied_domain", message: `denied domain ${host}` }
  if (options.allow !== undefined && options.allow.length > 0) {
    return domainListed(host, options.allow)
      ? undefined
      : { category: "unlisted_domain", message: `domain ${host} is not on the allow list` }
  }
  // With only a deny list, only denied domains are reported; with no list, every URL is.
  return options.deny !== undefined && options.deny.length > 0
    ? undefined
    : { category: "url", message: `URL or domain ${host}` }
}

/** URLs and domains in `input` that the lists do not allow; spans at raw offsets. */
export const detectUrls = (input: string | TextViews, options: UrlOptions = {}): Array<Finding> => {
  const textViews = viewsOf(input)
  const found = new FindingSet("url")
  for (const view of textViews.literal) {
    const report = (at: number, text: string, host: string) => {
      const verdict = verdictFor(host, options)
      if (verdict !== undefined) found.add(verdict.category, view.toRaw(at, at + text.length), verdict.message)
    }
    if (options.images_only === true) {
      eachImageUrl(view.text, (at, url) => report(at, url, hostOfUrl(url)))
      continue
    }
    const hasScheme = view.text.indexOf("://") >= 0
    if (hasScheme) {
      eachMatch(SCHEME_URL, view, (m) => {
        const url = m[0].replace(TRAILING_PUNCTUATION, "")
        report(m.index, url, hostOfUrl(url))
      })
    }
    if (view.text.indexOf("mailto:") >= 0) {
      eachMatch(MAILTO, view, (m) =>
        report(m.index, m[0], normaliseHost(m[0].slice(m[0].indexOf("@") + 1).replace(/[?#].*$/, "")))
      )
    }
    const reportBare = (at: number, match: string) => {
      const text = match.replace(TRAILING_PUNCTUATION, "")
      report(at, text, hostOfBare(text))
    }
    eachBareDomain(view.text, reportBare)
    if (HAS_DEFANG.test(view.text)) eachMatch(DEFANGED_DOMAIN, view, (m) => reportBare(m.index, m[0]))
  }
  return found.result()
}
