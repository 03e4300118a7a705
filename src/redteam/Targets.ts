/**
 * Talking to a red-team target. Three kinds:
 * - `demo://local-agent`, answered in process by the demo agent;
 * - the target protocol: POST JSON `{messages: [{role, content}], session_id}`,
 *   answer `{reply, tool_calls?: [{name, arguments}]}`;
 * - an OpenAI chat-completions-compatible endpoint (a URL ending in
 *   `/chat/completions`): POST `{model, messages}`, read `choices[0].message`
 *   (`content`, `tool_calls[].function.{name, arguments}`).
 * URLs pass the outbound guard (src/platform/OutboundGuard.ts: http or https;
 * internal addresses refused unless the host is on HTTP_URL_ALLOWLIST),
 * checked at dispatch and again whenever a connection is made, against the
 * address it connects to. Redirects are not followed. The answer is read as a
 * stream and the call aborted past MAX_RESPONSE_BYTES. Requests are spaced
 * per workspace (all its targets together), per process.
 */
import { Clock, Data, Duration, Effect, Either } from "effect"
import { isRedirect, type OutboundGuard, redirectRefusal } from "../platform/OutboundGuard.js"
import { type ChatMessage, demoReply, type TargetReply, type ToolCall } from "./DemoAgent.js"
import { DEMO_TARGET_URL } from "./Domain.js"

export const TARGET_TIMEOUT = Duration.seconds(15)
export const MAX_RESPONSE_BYTES = 256 * 1024
/** Tool calls of one answer: each is a guardrail decision and a trace, so a target cannot make thousands of them. */
export const MAX_TOOL_CALLS = 16
/** Nesting of an answer's JSON: deeper, walking it (planted values, the pipeline, storage) would overflow the stack. */
export const MAX_ANSWER_DEPTH = 32
/** Remote targets: at most this many requests per second per workspace, per worker process. */
export const REMOTE_REQUESTS_PER_SECOND = 20

/** Who calls a target: the guard its calls go through, and the workspace whose rate they count against. */
export interface TargetCaller {
  readonly outbound: OutboundGuard
  readonly workspaceId: string
}

export interface TargetProblem {
  readonly code: "target_not_allowed" | "invalid_target_url"
  readonly message: string
}

/** The dispatch-time check: `Right(url)` when the target may be called (plain http allowed, the name must resolve). */
export const checkTargetUrl = (
  outbound: OutboundGuard,
  raw: string
): Effect.Effect<Either.Either<URL, TargetProblem>> => {
  if (raw === DEMO_TARGET_URL) return Effect.succeed(Either.right(new URL(raw)))
  return outbound.checkUrl(raw, { plainHttp: "public", unresolved: "refuse" }).pipe(
    Effect.mapError((refusal): TargetProblem =>
      refusal.kind === "invalid_url"
        ? { code: "invalid_target_url", message: `target_url: ${refusal.message} or ${DEMO_TARGET_URL}.` }
        : { code: "target_not_allowed", message: `target_url: ${refusal.message}` }
    ),
    Effect.either
  )
}

// ---- calling a target

export class TargetError extends Data.TaggedError("TargetError")<{ readonly message: string }> {}

const asToolCalls = (raw: unknown): ReadonlyArray<ToolCall> => {
  if (!Array.isArray(raw)) return []
  return raw.flatMap((item: unknown): ReadonlyArray<ToolCall> => {
    if (typeof item !== "object" || item === null) return []
    const record = item as Record<string, unknown>
    const fn = (
      typeof record["function"] === "object" && record["function"] !== null ? record["function"] : record
    ) as Record<string, unknown>
    const name = fn["name"]
    if (typeof name !== "string") return []
    let args: unknown = fn["arguments"] ?? fn["params"] ?? {}
    if (typeof args === "string")
      args = Either.getOrElse(
        Either.try(() => JSON.parse(args as string) as unknown),
        () => ({ raw: args })
      )
    return [{ name, arguments: typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {} }]
  })
}

/** PostgreSQL stores neither a NUL character nor an unpaired surrogate: each becomes U+FFFD (one unit for one). */
const storableText = (text: string) => text.replaceAll("\u0000", "\uFFFD").toWellFormed()

/** The answer with storable strings (keys too), or Left when it nests deeper than MAX_ANSWER_DEPTH. */
const storableAnswer = (answer: TargetReply): Either.Either<TargetReply, string> => {
  let tooDeep = false
  const walk = (item: unknown, depth: number): unknown => {
    if (typeof item === "string") return storableText(item)
    if (typeof item !== "object" || item === null || tooDeep) return item
    if (depth >= MAX_ANSWER_DEPTH) {
      tooDeep = true
      return null
    }
    if (Array.isArray(item)) return item.map((inner) => walk(inner, depth + 1))
    return Object.fromEntries(Object.entries(item).map(([key, inner]) => [storableText(key), walk(inner, depth + 1)]))
  }
  const storable = walk(answer, 0) as TargetReply
  return tooDeep
    ? Either.left(`the target's answer nests deeper than ${MAX_ANSWER_DEPTH} levels`)
    : Either.right(storable)
}

const withToolCalls = (reply: string, raw: unknown): Either.Either<TargetReply, string> => {
  const toolCalls = asToolCalls(raw)
  return toolCalls.length > MAX_TOOL_CALLS
    ? Either.left(`the target's answer has ${toolCalls.length} tool calls; at most ${MAX_TOOL_CALLS} are evaluated`)
    : Either.right({ reply, tool_calls: toolCalls })
}

/** Reads either protocol's answer. */
export const parseTargetAnswer = (body: unknown): Either.Either<TargetReply, string> => {
  if (typeof body !== "object" || body === null)
    return Either.left("the target answered something that is not a JSON object")
  const record = body as Record<string, unknown>
  if (typeof record["reply"] === "string") return withToolCalls(record["reply"], record["tool_calls"])
  const choices = record["choices"]
  if (Array.isArray(choices) && typeof choices[0] === "object" && choices[0] !== null) {
    const message = (choices[0] as Record<string, unknown>)["message"] as Record<string, unknown> | undefined
    if (message !== undefined && typeof message === "object") {
      const content = typeof message["content"] === "string" ? message["content"] : ""
      return withToolCalls(content, message["tool_calls"])
    }
  }
  return Either.left("the target's answer has neither `reply` nor `choices[0].message`")
}

/**
 * A limiter of `perSecond` requests per key: each call waits for the key's next slot. Keys are workspaces, so
 * a workspace cannot multiply its rate by naming many target URLs, and one workspace's jobs do not slow another's.
 */
export const makeRateLimiter = (perSecond: number) => {
  const nextSlot = new Map<string, number>()
  const interval = 1000 / perSecond
  return (key: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const slot = Math.max(now, nextSlot.get(key) ?? 0)
      // Only keys whose next slot has passed are forgotten (they would start afresh anyway): clearing every
      // key let each one burst at once.
      if (nextSlot.size > 10_000) for (const [other, next] of nextSlot) if (next <= now) nextSlot.delete(other)
      nextSlot.set(key, slot + interval)
      return slot > now ? Effect.sleep(Duration.millis(slot - now)) : Effect.void
    })
}

const rateLimit = makeRateLimiter(REMOTE_REQUESTS_PER_SECOND)

const post = (outbound: OutboundGuard, url: URL, body: unknown) =>
  outbound
    .post(url, {
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
      timeoutMillis: Duration.toMillis(TARGET_TIMEOUT),
      maxResponseBytes: MAX_RESPONSE_BYTES
    })
    .pipe(
      Effect.mapError((failure) =>
        failure.reason === "too_large"
          ? new TargetError({
              message: `The target's answer is too large (over ${MAX_RESPONSE_BYTES} bytes); the call was aborted.`
            })
          : new TargetError({ message: `The target could not be reached: ${failure.message}` })
      )
    )

/** Sends the conversation to the target; the demo target answers in process. */
export const callTarget = (
  caller: TargetCaller,
  target: string,
  messages: ReadonlyArray<ChatMessage>,
  sessionId: string
): Effect.Effect<TargetReply, TargetError> =>
  Effect.gen(function* () {
    if (target === DEMO_TARGET_URL) return demoReply(messages)
    if (!URL.canParse(target))
      return yield* Effect.fail(new TargetError({ message: `target_url ${target} is not a URL.` }))
    yield* rateLimit(caller.workspaceId)
    const url = new URL(target)
    const chat = url.pathname.endsWith("/chat/completions")
    const answer = yield* post(
      caller.outbound,
      url,
      chat ? { model: "target", messages } : { messages, session_id: sessionId }
    )
    const { status } = answer
    if (isRedirect(status))
      return yield* Effect.fail(new TargetError({ message: `The target ${redirectRefusal(status)}.` }))
    if (status < 200 || status >= 300)
      return yield* Effect.fail(new TargetError({ message: `The target answered HTTP ${status}.` }))
    const text = answer.body.toString("utf8")
    const parsed = Either.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => "the target's answer is not JSON"
    }).pipe(
      Either.flatMap(parseTargetAnswer),
      // Tool-call arguments sent as a JSON string are parsed by now: their text is checked too.
      Either.flatMap(storableAnswer)
    )
    return yield* Either.match(parsed, {
      onLeft: (problem) => Effect.fail(new TargetError({ message: `Unreadable answer: ${problem}.` })),
      onRight: Effect.succeed
    })
  })

/** Sends the user turns one at a time (multi-turn), keeping the target's answers in the conversation. */
export const converse = (caller: TargetCaller, target: string, turns: ReadonlyArray<string>, sessionId: string) =>
  Effect.gen(function* () {
    const messages: Array<ChatMessage> = []
    const transcript: Array<{ readonly user: string; readonly answer: TargetReply }> = []
    for (const turn of turns) {
      messages.push({ role: "user", content: turn })
      const answer = yield* callTarget(caller, target, messages, sessionId)
      messages.push({ role: "assistant", content: answer.reply })
      transcript.push({ user: turn, answer })
    }
    return transcript
  })
