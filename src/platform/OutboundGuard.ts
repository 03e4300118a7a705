/**
 * The one guard of every outbound call (provider connections, budget alert
 * and escalation webhooks, red-team targets, knowledge-source locations):
 * an outbound URL may not reach loopback, private, link-local, CGNAT,
 * multicast, unspecified, IPv4-mapped/compatible IPv6 or metadata hosts
 * (OutboundAddresses.ts) unless its host is on HTTP_URL_ALLOWLIST.
 *
 * - Save time (`checkUrl`, `validateUrl`): the URL's host is resolved and
 *   every answer checked. A name that does not resolve now is accepted (DNS
 *   may be down, the name not yet published) unless the caller asks
 *   otherwise: it is checked again whenever a connection is made.
 * - Connect time (`connectOptions`, `post`): an IP literal is checked before
 *   the request; a name is resolved once, inside the socket's own `lookup`,
 *   and the socket connects to exactly the addresses that were checked, so a
 *   DNS answer that changes between check and connect (rebinding) cannot
 *   redirect it. Hosts on the allowlist are resolved the same way, unchecked.
 * - Redirects are never followed: node:http does not follow them, and a 3xx
 *   answer is the caller's error.
 *
 * The resolver is a `Context.Reference` (default: the system's `dns.lookup`),
 * so tests inject one.
 */
import { Context, Data, Effect, Either } from "effect"
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns"
import type { IncomingHttpHeaders } from "node:http"
import { request as httpRequest } from "node:http"
import { request as httpsRequest } from "node:https"
import { isIP, type LookupFunction } from "node:net"
import { AppConfig } from "./Config.js"
import { BadRequest } from "../http/Errors.js"
import { blockedAddress, blockedName, isAllowlisted, normalizeHost } from "./OutboundAddresses.js"

export interface ResolvedAddress {
  readonly address: string
  readonly family: 4 | 6
}

export interface HostResolver {
  /** Every address of `host`; rejects (or answers none) when it does not resolve. */
  readonly resolve: (host: string) => Promise<ReadonlyArray<ResolvedAddress>>
}

const systemResolver: HostResolver = {
  resolve: (host) =>
    new Promise((resolve, reject) =>
      dnsLookup(host, { all: true, verbatim: true }, (error, found) =>
        error
          ? reject(error)
          : resolve(found.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 })))
      )
    )
}

export class Resolver extends Context.Reference<Resolver>()("platform/Resolver", {
  defaultValue: (): HostResolver => systemResolver
}) {}

/** Why a URL may not be called: `invalid_url` (its form) or `not_allowed` (where it points). */
export interface UrlRefusal {
  readonly kind: "invalid_url" | "not_allowed"
  readonly message: string
}

export interface UrlRules {
  /** `allowlisted` (default): plain http only to hosts on HTTP_URL_ALLOWLIST; `public`: http to every public host. */
  readonly plainHttp?: "allowlisted" | "public"
  /** `accept` (default): a name that does not resolve now is saved and checked at connect time. */
  readonly unresolved?: "accept" | "refuse"
}

/** An outbound call that did not produce an answer. `refused`: the guard stopped it before any connection. */
export class OutboundFailed extends Data.TaggedError("OutboundFailed")<{
  readonly reason: "refused" | "unreachable" | "timeout" | "too_large"
  readonly message: string
}> {}

export interface OutboundAnswer {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

export interface PostOptions {
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | Uint8Array
  /** For the whole call: connecting, sending, and reading the answer to its end. */
  readonly timeoutMillis: number
  /** The answer is read as a stream and the call aborted past this many bytes. */
  readonly maxResponseBytes: number
}

/** What a node:http(s) request needs to connect only where the guard allows. */
export interface ConnectOptions {
  readonly lookup: LookupFunction
}

/** The error code of a connection the guard refused in its lookup. */
export const REFUSED_CODE = "EOUTBOUNDREFUSED"
const SAVE_TIME_LOOKUP_MILLIS = 3_000

const refusedError = (message: string) => Object.assign(new Error(message), { code: REFUSED_CODE })

const notAllowed = (message: string): UrlRefusal => ({
  kind: "not_allowed",
  message: `${message}; outbound calls may not reach internal addresses unless the host is on HTTP_URL_ALLOWLIST.`
})

/** Why `host` is refused before any lookup (an internal IP literal, or a local or metadata name), or undefined. */
const hostProblem = (host: string): string | undefined => {
  if (isIP(host) !== 0) return refuseAddresses(host, [{ address: host, family: isIP(host) === 6 ? 6 : 4 }])
  const reason = blockedName(host)
  return reason === undefined ? undefined : `the host ${host} is ${reason}`
}

/** Refusal of one resolved address set, or undefined when every address is public. */
const refuseAddresses = (host: string, addresses: ReadonlyArray<ResolvedAddress>): string | undefined => {
  for (const { address } of addresses) {
    const range = blockedAddress(address)
    if (range !== undefined) {
      return address === host
        ? `the host ${host} is a ${range} address`
        : `the host ${host} resolves to ${address}, a ${range} address`
    }
  }
  return undefined
}

export class OutboundGuard extends Effect.Service<OutboundGuard>()("platform/OutboundGuard", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const resolver = yield* Resolver
    const allowlist = config.httpAllowlist

    /** Resolves once and hands the socket only what was checked (all of it must pass unless allowlisted). */
    const pinnedLookup =
      (checked: boolean): LookupFunction =>
      (hostname: string, options: LookupOptions, callback) => {
        resolver.resolve(hostname).then(
          (found) => {
            const refusal = checked ? refuseAddresses(hostname, found) : undefined
            if (refusal !== undefined) return callback(refusedError(notAllowed(refusal).message), "", 4)
            const wanted =
              options.family === 4 || options.family === 6 ? found.filter((a) => a.family === options.family) : found
            const first = wanted[0]
            if (first === undefined) {
              return callback(
                Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }),
                "",
                4
              )
            }
            if (options.all === true)
              return callback(
                null,
                wanted.map((a): LookupAddress => ({ ...a }))
              )
            return callback(null, first.address, first.family)
          },
          (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), "", 4)
        )
      }
    const checkedLookup = pinnedLookup(true)
    const allowlistedLookup = pinnedLookup(false)

    // The gateway asks per request: the verdict per host is cached (a literal's check never changes; a name's
    // addresses are checked in its lookup, per new socket).
    const verdicts = new Map<string, Either.Either<ConnectOptions, OutboundFailed>>()
    const verdictOf = (hostname: string): Either.Either<ConnectOptions, OutboundFailed> => {
      const host = normalizeHost(hostname)
      if (isAllowlisted(host, allowlist)) return Either.right({ lookup: allowlistedLookup })
      const problem = hostProblem(host)
      return problem === undefined
        ? Either.right({ lookup: checkedLookup })
        : Either.left(new OutboundFailed({ reason: "refused", message: notAllowed(problem).message }))
    }

    /** Connect time, synchronous: refuses a blocked literal or name now; otherwise the lookup that checks and pins. */
    const connectOptions = (url: URL): Either.Either<ConnectOptions, OutboundFailed> => {
      const cached = verdicts.get(url.hostname)
      if (cached !== undefined) return cached
      const verdict = verdictOf(url.hostname)
      if (verdicts.size >= 1_000) verdicts.clear()
      verdicts.set(url.hostname, verdict)
      return verdict
    }

    const resolveForSave = (host: string) =>
      Effect.tryPromise(() => resolver.resolve(host)).pipe(
        Effect.timeout(SAVE_TIME_LOOKUP_MILLIS),
        Effect.orElseSucceed((): ReadonlyArray<ResolvedAddress> => [])
      )

    /** Save time: the URL in its normalized form, or why it may not be stored. */
    const checkUrl = (raw: string, rules: UrlRules = {}): Effect.Effect<URL, UrlRefusal> =>
      Effect.gen(function* () {
        const invalid = (message: string) => Effect.fail<UrlRefusal>({ kind: "invalid_url", message })
        if (!URL.canParse(raw)) return yield* invalid("expected an absolute http(s) URL")
        const url = new URL(raw)
        if (url.protocol !== "https:" && url.protocol !== "http:")
          return yield* invalid(`expected https, got ${url.protocol}`)
        if (url.username !== "" || url.password !== "") return yield* invalid("a URL must not carry credentials")
        const host = normalizeHost(url.hostname)
        const allowlisted = isAllowlisted(host, allowlist)
        if (url.protocol === "http:" && (rules.plainHttp ?? "allowlisted") === "allowlisted" && !allowlisted) {
          return yield* invalid("expected an https URL (plain http only to hosts on HTTP_URL_ALLOWLIST)")
        }
        if (allowlisted) return url
        const early = hostProblem(host)
        if (early !== undefined) return yield* Effect.fail(notAllowed(early))
        if (isIP(host) !== 0) return url
        const found = yield* resolveForSave(host)
        if (found.length === 0) {
          return (rules.unresolved ?? "accept") === "accept"
            ? url
            : yield* Effect.fail(notAllowed(`the host ${host} does not resolve`))
        }
        const refusal = refuseAddresses(host, found)
        return refusal === undefined ? url : yield* Effect.fail(notAllowed(refusal))
      })

    /** `checkUrl` as the API's 400 `validation_failed` naming the field `path`. */
    const validateUrl = (raw: string, path: string, rules: UrlRules = {}) =>
      Effect.mapError(
        checkUrl(raw, rules),
        (refusal) =>
          new BadRequest({
            code: "validation_failed",
            message: `${path}: ${refusal.message}`,
            details: [{ path, message: refusal.message }]
          })
      )

    /** One POST, never following redirects; the answer is read as a stream up to `maxResponseBytes`. */
    const post = (url: URL, options: PostOptions): Effect.Effect<OutboundAnswer, OutboundFailed> =>
      Effect.flatMap(Either.match(connectOptions(url), { onLeft: Effect.fail, onRight: Effect.succeed }), (connect) =>
        Effect.async<OutboundAnswer, OutboundFailed>((resume) => {
          const send = url.protocol === "https:" ? httpsRequest : httpRequest
          const body = typeof options.body === "string" ? Buffer.from(options.body, "utf8") : options.body
          let settled = false
          const finish = (result: Effect.Effect<OutboundAnswer, OutboundFailed>) => {
            if (settled) return
            settled = true
            clearTimeout(deadline)
            resume(result)
          }
          const fail = (reason: OutboundFailed["reason"], message: string) => {
            finish(Effect.fail(new OutboundFailed({ reason, message })))
            request.destroy()
          }
          const request = send(url, {
            method: "POST",
            agent: false,
            lookup: connect.lookup,
            headers: { ...options.headers, "content-length": String(body.byteLength) }
          })
          // The whole exchange, not an idle socket: a receiver trickling its answer byte by byte is cut too.
          const deadline = setTimeout(
            () => fail("timeout", `no complete answer within ${options.timeoutMillis} ms`),
            options.timeoutMillis
          )
          request.on("error", (error: NodeJS.ErrnoException) =>
            fail(error.code === REFUSED_CODE ? "refused" : "unreachable", error.message)
          )
          request.on("response", (response) => {
            const chunks: Array<Buffer> = []
            let received = 0
            response.on("data", (chunk: Buffer) => {
              received += chunk.byteLength
              if (received > options.maxResponseBytes) {
                fail("too_large", `the answer is larger than ${options.maxResponseBytes} bytes`)
                response.destroy()
                return
              }
              chunks.push(chunk)
            })
            response.on("error", (error) => fail("unreachable", error.message))
            response.on("end", () =>
              finish(
                Effect.succeed({
                  status: response.statusCode ?? 0,
                  headers: response.headers,
                  body: Buffer.concat(chunks)
                })
              )
            )
          })
          request.end(body)
          return Effect.sync(() => {
            clearTimeout(deadline)
            request.destroy()
          })
        })
      )

    return { checkUrl, validateUrl, connectOptions, post }
  })
}) {}

/** How a 3xx answer is reported: redirects are never followed (docs/outbound.md). */
export const redirectRefusal = (status: number) =>
  `answered HTTP ${status}, a redirect; outbound calls do not follow redirects`

export const isRedirect = (status: number) => status >= 300 && status < 400
