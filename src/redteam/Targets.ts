/**
 * Talking to a red-team target. Three kinds:
 * - `demo://local-agent`, answered in process by the demo agent;
 * - the target protocol: POST JSON `{messages: [{role, content}], session_id}`,
 *   answer `{reply, tool_calls?: [{name, arguments}]}`;
 * - an OpenAI chat-completions-compatible endpoint (a URL ending in
 *   `/chat/completions`): POST `{model, messages}`, read `choices[0].message`
 *   (`content`, `tool_calls[].function.{name, arguments}`).
 * URLs pass an SSRF guard (http/https only; private, loopback, link-local and
 * other non-public addresses refused unless the host is on HTTP_URL_ALLOWLIST),
 * checked at dispatch and again on every request (DNS may change). Redirects
 * are not followed. Requests per target are spaced by a per-process rate limit.
 */
import { Data, Duration, Effect, Either } from "effect"
import { lookup } from "node:dns/promises"
import { BlockList, isIP } from "node:net"
import { type ChatMessage, demoReply, type TargetReply, type ToolCall } from "./DemoAgent.js"
import { DEMO_TARGET_URL } from "./Domain.js"

export const TARGET_TIMEOUT = Duration.seconds(15)
const MAX_RESPONSE_BYTES = 256 * 1024
/** Remote targets: at most this many requests per second per target URL, per worker process. */
export const REMOTE_REQUESTS_PER_SECOND = 20

const nonPublic = new BlockList()
for (const [address, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
] as const) {
  nonPublic.addSubnet(address, prefix, "ipv4")
}
for (const [address, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["::ffff:0:0", 96],
  ["64:ff9b::", 96]
] as const) {
  nonPublic.addSubnet(address, prefix, "ipv6")
}

export const isNonPublicAddress = (address: string): boolean => {
  const family = isIP(address)
  if (family === 4) return nonPublic.check(address, "ipv4")
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
    return mapped !== null ? nonPublic.check(mapped[1]!, "ipv4") : nonPublic.check(address, "ipv6")
  }
  return true
}

export interface TargetProblem {
  readonly code: "target_not_allowed" | "invalid_target_url"
  readonly message: string
}

/** The SSRF guard: `Right(url)` when the target may be called. */
export const checkTargetUrl = (
  raw: string,
  allowlist: ReadonlyArray<string>
): Effect.Effect<Either.Either<URL, TargetProblem>> =>
  Effect.gen(function* () {
    if (raw === DEMO_TARGET_URL) return Either.right(new URL(raw))
    const parsed = Either.try(() => new URL(raw))
    if (Either.isLeft(parsed)) {
      return Either.left({ code: "invalid_target_url" as const, message: `target_url ${raw} is not a URL.` })
    }
    const url = parsed.right
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return Either.left({
        code: "invalid_target_url" as const,
        message: `target_url must be http(s) or ${DEMO_TARGET_URL}, got ${url.protocol}`
      })
    }
    if (url.username !== "" || url.password !== "") {
      return Either.left({ code: "invalid_target_url" as const, message: "target_url must not carry credentials." })
    }
    const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase()
    if (allowlist.some((allowed) => allowed.toLowerCase() === host)) return Either.right(url)
    const addresses =
      isIP(host) !== 0
        ? [host]
        : yield* Effect.tryPromise(() => lookup(host, { all: true, verbatim: true })).pipe(
            Effect.map((found) => found.map((entry) => entry.address)),
            Effect.orElseSucceed((): ReadonlyArray<string> => [])
          )
    if (addresses.length === 0) {
      return Either.left({ code: "target_not_allowed" as const, message: `The host ${host} does not resolve.` })
    }
    const blocked = addresses.find(isNonPublicAddress)
    return blocked === undefined
      ? Either.right(url)
      : Either.left({
          code: "target_not_allowed" as const,
          message: `The host ${host} resolves to a private or loopback address (${blocked}); add it to HTTP_URL_ALLOWLIST to allow it.`
        })
  })

// ---- calling a target

export class TargetError extends Data.TaggedError("TargetError")<{ readonly message: string }> {}

const asToolCalls = (raw: unknown): ReadonlyArray<ToolCall> => {
  if (!Array.isArray(raw)) return []
  return raw.flatMap((item: unknown): ReadonlyArray<ToolCall> => {
    if (typeof item !== "object" || item === null) return []
    const record = item as Record<string, unknown>
    const fn = (typeof record["function"] === "object" && record["function"] !== null
      ? record["function"]
      : record) as Record<string, unknown>
    const name = fn["name"]
    if (typeof name !== "string") return []
    let args: unknown = fn["arguments"] ?? fn["params"] ?? {}
    if (typeof args === "string") args = Either.getOrElse(Either.try(() => JSON.parse(args as string) as unknown), () => ({ raw: args }))
    return [{ name, arguments: typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {} }]
  })
}

/** Reads either protocol's answer. */
export const parseTargetAnswer = (body: unknown): Either.Either<TargetReply, string> => {
  if (typeof body !== "object" || body === null) return Either.left("the target answered something that is not a JSON object")
  const record = body as Record<string, unknown>
  if (typeof record["reply"] === "string") {
    return Either.right({ reply: record["reply"], tool_calls: asToolCalls(record["tool_calls"]) })
  }
  const choices = record["choices"]
  if (Array.isArray(choices) && typeof choices[0] === "object" && choices[0] !== null) {
    const message = (choices[0] as Record<string, unknown>)["message"] as Record<string, unknown> | undefined
    if (message !== undefined && typeof message === "object") {
      const content = typeof message["content"] === "string" ? message["content"] : ""
      return Either.right({ reply: content, tool_calls: asToolCalls(message["tool_calls"]) })
    }
  }
  return Either.left("the target's answer has neither `reply` nor `choices[0].message`")
}

const nextSlot = new Map<string, number>()

/** Waits for this target's next request slot (per process). */
const rateLimit = (target: string) =>
  Effect.suspend(() => {
    const now = Date.now()
    const interval = 1000 / REMOTE_REQUESTS_PER_SECOND
    const slot = Math.max(now, nextSlot.get(target) ?? 0)
    nextSlot.set(target, slot + interval)
    if (nextSlot.size > 10_000) nextSlot.clear()
    return slot > now ? Effect.sleep(Duration.millis(slot - now)) : Effect.void
  })

const post = (url: URL, body: unknown) =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(body),
        redirect: "manual",
        signal: AbortSignal.any([signal, AbortSignal.timeout(Duration.toMillis(TARGET_TIMEOUT))])
      })
      const text = await response.text()
      return { status: response.status, text }
    },
    catch: (error) => new TargetError({ message: `The target could not be reached: ${error instanceof Error ? error.message : String(error)}` })
  })

/** Sends the conversation to the target; the demo target answers in process. */
export const callTarget = (
  target: string,
  messages: ReadonlyArray<ChatMessage>,
  sessionId: string,
  allowlist: ReadonlyArray<string>
): Effect.Effect<TargetReply, TargetError> =>
  Effect.gen(function* () {
    if (target === DEMO_TARGET_URL) return demoReply(messages)
    const checked = yield* checkTargetUrl(target, allowlist)
    if (Either.isLeft(checked)) return yield* Effect.fail(new TargetError({ message: checked.left.message }))
    yield* rateLimit(target)
    const url = checked.right
    const chat = url.pathname.endsWith("/chat/completions")
    const { status, text } = yield* post(url, chat ? { model: "target", messages } : { messages, session_id: sessionId })
    if (status < 200 || status >= 300) return yield* Effect.fail(new TargetError({ message: `The target answered HTTP ${status}.` }))
    if (text.length > MAX_RESPONSE_BYTES) return yield* Effect.fail(new TargetError({ message: "The target's answer is too large." }))
    const parsed = Either.flatMap(
      Either.try({ try: () => JSON.parse(text) as unknown, catch: () => "the target's answer is not JSON" }),
      parseTargetAnswer
    )
    return yield* Either.match(parsed, {
      onLeft: (problem) => Effect.fail(new TargetError({ message: `Unreadable answer: ${problem}.` })),
      onRight: Effect.succeed
    })
  })

/** Sends the user turns one at a time (multi-turn), keeping the target's answers in the conversation. */
export const converse = (
  target: string,
  turns: ReadonlyArray<string>,
  sessionId: string,
  allowlist: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const messages: Array<ChatMessage> = []
    const transcript: Array<{ readonly user: string; readonly answer: TargetReply }> = []
    for (const turn of turns) {
      messages.push({ role: "user", content: turn })
      const answer = yield* callTarget(target, messages, sessionId, allowlist)
      messages.push({ role: "assistant", content: answer.reply })
      transcript.push({ user: turn, answer })
    }
    return transcript
  })
