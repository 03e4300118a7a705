/**
 * Screening the exchanges an MCP server starts: its sampling and
 * elicitation requests to the client (decided like its tool results, as
 * `tool.result`), and the client's answers to them (decided like what the
 * agent sends out, as `output.proposed`). Whatever is withheld is answered
 * to the server with an error in the client's place, so the server never
 * waits for an answer that will not come. (ServerRequests.ts holds the pure
 * parts.)
 */
import { Cause, Effect, Option } from "effect"
import type { ProposedEventInput } from "../authorization/Authorization.js"
import type { DecisionAnswer } from "../authorization/Decisions.js"
import { MAX_SCREENED_ITEMS } from "../gateway/GuardrailTexts.js"
import type { UpstreamResponse } from "../gateway/Upstream.js"
import type { HttpError } from "../http/Errors.js"
import type { Caller } from "../identity/Authentication.js"
import type { Screen } from "./Answer.js"
import type { Verdict } from "./Relay.js"
import type { ServerTarget } from "./Servers.js"
import {
  answerAction,
  type ClientAnswer,
  requestSource,
  requestText,
  rewrittenAnswer,
  rewrittenRequest,
  serverRequestOf,
  withheldAnswer,
  withheldClientAnswer
} from "./ServerRequests.js"
import { withheldReason } from "./Screening.js"
import type { UpstreamMethod } from "./UpstreamCall.js"

interface Failure {
  readonly message: string
}

/** The most sampling and elicitation requests decided on one relayed stream (as many as one LLM gateway answer decides). */
export const MAX_SERVER_REQUESTS_PER_STREAM = MAX_SCREENED_ITEMS

/** Why a screening decision could not be made, for the notice that replaces what it screened. */
export const whyUndecided = (cause: Cause.Cause<Failure>) =>
  Option.match(Cause.failureOption(cause), {
    onNone: () => "the decision failed",
    onSome: (error) => error.message
  })

/** Where the gateway's own messages to the server go: the server, and the headers of a message to it. */
export interface ServerChannel {
  readonly target: ServerTarget
  readonly headers: Record<string, string>
}

/** The decision of one event of an MCP session (the gateway's, as `POST /v1/events` would make it). */
export type DecideEvent = (
  caller: Caller,
  target: ServerTarget,
  session: string | undefined,
  kind: ProposedEventInput["kind"],
  action: ProposedEventInput["action"]
) => Effect.Effect<DecisionAnswer, HttpError>

export const makeServerRequestScreening = (deps: {
  readonly call: (
    url: URL,
    headers: Record<string, string>,
    body: Uint8Array,
    method: UpstreamMethod
  ) => Effect.Effect<UpstreamResponse, Failure>
  readonly decide: DecideEvent
}) => {
  /** Posts `message` to the server in the client's place (its answer is not read). */
  const tellServer = (channel: ServerChannel, message: unknown) =>
    deps.call(channel.target.url, channel.headers, Buffer.from(JSON.stringify(message), "utf8"), "POST").pipe(
      Effect.map((upstream) => upstream.abort()),
      Effect.catchAll((error) =>
        Effect.logWarning("the MCP server could not be told that the guardrail withheld a message", error.message)
      )
    )

  /**
   * `screen`, with the server's sampling and elicitation requests decided first as its tool results are:
   * passed, rewritten, or withheld (deny, defer, or undecidable: fail closed) with the server told.
   */
  const withServerRequests = (
    caller: Caller,
    channel: ServerChannel,
    session: string | undefined,
    screen: Screen
  ): Screen => {
    let screened = 0
    return (message) => {
      const request = serverRequestOf(message)
      if (request === undefined) return screen(message)
      // Each is decided and recorded (and, withheld, answered with a request of the gateway's own): past the
      // bound, the stream's further requests are dropped unseen (fail closed), not decided without end.
      if (++screened > MAX_SERVER_REQUESTS_PER_STREAM)
        return screened === MAX_SERVER_REQUESTS_PER_STREAM + 1
          ? Effect.as(
              Effect.logWarning(
                `MCP server ${channel.target.id} sent more than ${MAX_SERVER_REQUESTS_PER_STREAM} sampling or elicitation requests on one stream; the rest are dropped`
              ),
              "drop" as const
            )
          : Effect.succeed("drop" as const)
      const { target } = channel
      const withhold = (why: string) => Effect.as(tellServer(channel, withheldAnswer(request, why)), "drop" as const)
      return deps
        .decide(caller, target, session, "tool.result", {
          operation: request.method,
          content: requestText(request),
          sources: [
            { path: "content", origin: target.resultOrigin, source_id: `mcp:${target.id}/${requestSource(request)}` }
          ]
        })
        .pipe(
          Effect.flatMap((answer): Effect.Effect<Verdict> => {
            if (answer.effect === "permit") return Effect.succeed("keep")
            if (answer.effect === "rewrite")
              return Effect.succeed({ replace: rewrittenRequest(request, answer.transformed_value ?? "") })
            return withhold(withheldReason(answer))
          }),
          Effect.catchAllCause((cause) => withhold(`it could not be screened (${whyUndecided(cause)}).`))
        )
    }
  }

  /**
   * The client's answer to a sampling or elicitation request, decided as what it sends out: the body to
   * pass on (as sent, or rewritten), or none when it was withheld and the server told instead. A form's
   * answers are not edited: a rewrite of them withholds them.
   */
  const screenClientAnswer = (
    caller: Caller,
    channel: ServerChannel,
    session: string | undefined,
    answer: ClientAnswer,
    sent: string
  ): Effect.Effect<Option.Option<string>> => {
    const withhold = (why: string) => Effect.as(tellServer(channel, withheldClientAnswer(answer, why)), Option.none())
    return deps.decide(caller, channel.target, session, "output.proposed", answerAction(answer)).pipe(
      Effect.flatMap((decision) => {
        if (decision.effect === "permit") return Effect.succeed(Option.some(sent))
        const rewritten =
          decision.effect === "rewrite" ? rewrittenAnswer(answer, decision.transformed_value ?? "") : undefined
        return rewritten === undefined
          ? withhold(withheldReason(decision))
          : Effect.succeed(Option.some(JSON.stringify(rewritten)))
      }),
      Effect.catchAllCause((cause) => withhold(`it could not be screened (${whyUndecided(cause)}).`))
    )
  }

  return { withServerRequests, screenClientAnswer }
}
