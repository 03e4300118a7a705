/**
 * Idempotent hot endpoints (`POST /v1/events`, run-event appends): a request
 * with an `Idempotency-Key` claims the key in its workspace before it runs,
 * and stores its success under the key; a repeat within 24 h answers that
 * success and writes nothing. The key's primary key serializes concurrent
 * duplicates: the one that did not claim it waits for the first to finish
 * (or to fail, which gives the key up). A failure is not stored, so a retry
 * after a 429 or 503 runs again. A request that claimed its key runs to its
 * end even when its client goes away meanwhile (a timeout, a dropped
 * connection): that client's retry is what the key is for, and it must get
 * the first answer, not a second decision. Requests with a key never take
 * the fast lane's direct path (it cannot wait on the database).
 */
import { Duration, Effect, Either, Fiber, Option, ParseResult, Schedule, Schema, Scope } from "effect"
import { createHash } from "node:crypto"
import { type HttpError, validationFailed } from "../http/Errors.js"
import { every } from "../platform/Background.js"
import { AppConfig } from "../platform/Config.js"
import { randomToken } from "../platform/Ids.js"
import type { HotEndpoint, HotRequest } from "../http/Hot.js"
import { IDEMPOTENCY_HEADER, IdempotencyKey, keyInFlight, keyReused } from "./Domain.js"
import { IdempotencyRepo } from "./Repo.js"

const decodeKey = Schema.decodeUnknownEither(IdempotencyKey)

/** How long a duplicate waits for the first request with its key, polling. */
const WAIT_FOR_FIRST = Schedule.spaced(Duration.millis(25)).pipe(Schedule.upTo(Duration.seconds(10)))

type Outcome<A> = { readonly _tag: "Answered"; readonly value: A } | { readonly _tag: "Released" }

export class Idempotency extends Effect.Service<Idempotency>()("idempotency/Idempotency", {
  scoped: Effect.gen(function* () {
    const repo = yield* IdempotencyRepo
    const abandonedAfterMillis = (yield* AppConfig).idempotencyAbandonedAfterMillis
    // Renewed well within the abandon time, so a busy event loop or a slow statement does not lose the claim.
    const renewEvery = Duration.millis(abandonedAfterMillis / 10)
    // Runs holding a key outlive a request whose client left; they end (and give their key up) with the service.
    const runs = yield* Effect.scope

    /**
     * The hot endpoint, made idempotent per `Idempotency-Key`; its success is stored as `success` encodes
     * it, after `storable` (the workspace's data handling mode: a repeat answers what may be kept).
     */
    const hot = <P, Payload, A, I>(
      endpoint: HotEndpoint<P, Payload, A>,
      success: Schema.Schema<A, I>,
      storable: (request: HotRequest<P, Payload>, value: A) => Effect.Effect<A> = (_, value) => Effect.succeed(value)
    ): HotEndpoint<P, Payload, A> => {
      const encode = Schema.encodeSync(success)
      const decode = Schema.decodeUnknown(success)
      // The credential's environment is part of the request: another environment's key gets its own answer.
      const digestOf = (request: HotRequest<P, Payload>) =>
        createHash("sha256")
          .update(
            JSON.stringify([
              endpoint.group,
              endpoint.endpoint,
              request.caller.environmentId,
              request.path ?? null,
              request.payload
            ])
          )
          .digest("hex")

      /** Waits for the first request's answer; `Released` when it failed and gave the key up. */
      const awaitFirst = (ref: { workspaceId: string; key: string }, digest: string) =>
        Effect.flatMap(repo.find(ref), (row): Effect.Effect<Outcome<A>, HttpError | "pending"> => {
          if (Option.isNone(row)) return Effect.succeed({ _tag: "Released" })
          if (row.value.request_digest !== digest) return Effect.fail(keyReused())
          if (row.value.response === null) return Effect.fail("pending")
          return Effect.map(Effect.orDie(decode(row.value.response)), (value) => ({ _tag: "Answered", value }))
        }).pipe(
          Effect.retry({ schedule: WAIT_FOR_FIRST, while: (error) => error === "pending" }),
          Effect.catchIf(
            (error): error is "pending" => error === "pending",
            () => Effect.fail(keyInFlight())
          )
        )

      const once = (request: HotRequest<P, Payload>, key: string) => {
        const ref = { workspaceId: request.caller.workspaceId, key }
        const digest = digestOf(request)
        const token = randomToken(16)
        const held = { ...ref, token }
        // While it runs the holder renews its claim: a request slower than the abandon time is not taken over
        // (before, a repeat then ran it a second time). A renewal that fails is logged and tried at the next beat.
        // Interruptible: the run is started uninterruptibly, and a fork inherits that (it would never end).
        const renewing = every("idempotency claim renewal", renewEvery, repo.renew(held)).pipe(
          Effect.delay(renewEvery),
          Effect.interruptible
        )
        const run = Effect.flatMap(Effect.fork(renewing), (beat) =>
          endpoint.useCase.run(request).pipe(
            Effect.ensuring(Fiber.interrupt(beat)),
            Effect.onExit((exit) =>
              exit._tag === "Success"
                ? Effect.flatMap(storable(request, exit.value), (kept) =>
                    repo.complete({ ...held, response: JSON.stringify(encode(kept)) })
                  )
                : repo.release(held)
            )
          )
        )
        // Claimed and started in one step, on a fiber of its own that the request's interruption (its client
        // gone) does not reach: before, that interruption gave the key up while the write it had queued still
        // committed, so the client's retry decided and wrote a second time.
        const claimAndStart = Effect.uninterruptible(
          Effect.flatMap(
            Effect.zip(repo.claim({ ...held, digest, abandonedAfterMillis }), Effect.scope),
            ([claimed, requestScope]) =>
              Option.isSome(claimed)
                ? Effect.asSome(Effect.forkIn(Scope.extend(run, requestScope), runs))
                : Effect.succeedNone
          )
        )
        const attempt: Effect.Effect<A, HttpError, Scope.Scope> = Effect.flatMap(
          claimAndStart,
          Option.match({
            onSome: Fiber.join,
            onNone: () =>
              Effect.flatMap(awaitFirst(ref, digest), (outcome) =>
                outcome._tag === "Answered" ? Effect.succeed(outcome.value) : Effect.suspend(() => attempt)
              )
          })
        )
        return attempt
      }

      return {
        ...endpoint,
        useCase: {
          direct: (input, answer) =>
            input.headers[IDEMPOTENCY_HEADER] === undefined ? endpoint.useCase.direct(input, answer) : { taken: false },
          run: (input) => {
            const header = input.headers[IDEMPOTENCY_HEADER]
            if (header === undefined) return endpoint.useCase.run(input)
            return Either.match(decodeKey(header), {
              onLeft: (error) =>
                Effect.fail(
                  validationFailed([
                    { path: ["headers", IDEMPOTENCY_HEADER], message: ParseResult.TreeFormatter.formatErrorSync(error) }
                  ])
                ),
              onRight: (key) => once(input, key)
            })
          }
        }
      }
    }

    return { hot }
  }),
  dependencies: [IdempotencyRepo.Default]
}) {}
