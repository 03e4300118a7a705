/**
 * Change notices between instances: "workspace X's feature flags changed".
 * Hot-path caches (feature flags) hold values until a notice drops them,
 * instead of reading the database per request or serving a stale value for a
 * TTL. A notice goes out through PostgreSQL `NOTIFY` on one channel and every
 * instance `LISTEN`s on a dedicated connection; the instance that made the
 * change also drops its own entry at once, before its answer. Over the
 * embedded database (one process) notices stay in the process.
 *
 * A notice can be missed while the listening connection is down, so caches
 * built on it keep a safety TTL (`NoticeCache`), and every cache is cleared
 * when listening (re)starts.
 */
import { PgClient } from "@effect/sql-pg"
import { Data, Deferred, Duration, Effect, Exit, Option, Redacted, type Scope } from "effect"
import Pg from "pg"
import { keepRunning } from "./Background.js"
import { AppConfig, isEmbeddedDatabase } from "./Config.js"

const CHANNEL = "guardrail_changes"
/** Every cache's entries when listening (re)starts, as nothing heard meanwhile can be trusted. */
const EVERYTHING = "*"
/** How often the listening connection is asked `select 1`; one unanswered for as long fails it. */
const LISTEN_CHECK = Duration.seconds(5)

type Listener = (key: string) => void

class ListeningLost extends Data.TaggedError("ListeningLost")<{ readonly cause: unknown }> {}

/**
 * Listens on CHANNEL over a connection of its own, calling `onNotice` with
 * each payload and `onListening` once LISTEN took; fails when the connection
 * breaks or stops answering. Not sql-pg's `listen`: its connection ignores
 * errors, so a listener whose connection died waited for ever, deaf.
 */
const listenOnce = (
  url: Redacted.Redacted,
  onNotice: (payload: string) => void,
  onListening: () => void
): Effect.Effect<never, ListeningLost, Scope.Scope> =>
  Effect.gen(function* () {
    const lost = yield* Deferred.make<never, ListeningLost>()
    const fail = (cause: unknown) => Deferred.unsafeDone(lost, Exit.fail(new ListeningLost({ cause })))
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const client = new Pg.Client({
          connectionString: Redacted.value(url),
          application_name: "guardrail-service",
          connectionTimeoutMillis: Duration.toMillis(LISTEN_CHECK)
        })
        client.on("error", fail)
        client.on("end", () => fail("the connection ended"))
        client.on("notification", (message) => {
          if (message.channel === CHANNEL && message.payload !== undefined) onNotice(message.payload)
        })
        return client
      }),
      // As sql-pg does: a connection that will not end does not hold up a restart or shutdown.
      (client) => Effect.ignore(Effect.tryPromise(() => client.end()).pipe(Effect.timeoutOption(Duration.seconds(1))))
    )
    const query = (text: string) =>
      Effect.tryPromise({ try: () => client.query(text), catch: (cause) => new ListeningLost({ cause }) }).pipe(
        Effect.timeoutFail({
          duration: LISTEN_CHECK,
          onTimeout: () => new ListeningLost({ cause: `no answer to ${text} within ${Duration.format(LISTEN_CHECK)}` })
        })
      )
    yield* Effect.tryPromise({ try: () => client.connect(), catch: (cause) => new ListeningLost({ cause }) })
    yield* query(`LISTEN ${CHANNEL}`)
    onListening()
    return yield* Effect.raceFirst(
      Deferred.await(lost),
      Effect.forever(Effect.zipRight(Effect.sleep(LISTEN_CHECK), query("select 1")))
    )
  })

export class ChangeNotices extends Effect.Service<ChangeNotices>()("platform/ChangeNotices", {
  scoped: Effect.gen(function* () {
    const config = yield* AppConfig
    const pg = yield* PgClient.PgClient
    const listeners = new Map<string, Set<Listener>>()

    const deliver = (topic: string, key: string) => {
      for (const listener of listeners.get(topic) ?? []) listener(key)
    }
    const deliverEverywhere = () => {
      for (const set of listeners.values()) for (const listener of set) listener(EVERYTHING)
    }
    const onNotice = (payload: string) => {
      const split = payload.indexOf(":")
      if (split > 0) deliver(payload.slice(0, split), payload.slice(split + 1))
    }

    // Over the embedded database (no URL) notices stay in the process.
    if (Option.isSome(config.databaseUrl)) {
      const url = config.databaseUrl.value
      // Notices sent while nobody listened are lost: every cache is dropped once listening (re)starts.
      const listen = Effect.scoped(listenOnce(url, onNotice, deliverEverywhere))
      yield* Effect.forkScoped(keepRunning("change-notice listener", listen))
    }

    /** Calls `listener` with the key of every notice on `topic` (`*`: drop everything). */
    const subscribe = (topic: string, listener: Listener) =>
      Effect.sync(() => {
        const set = listeners.get(topic) ?? new Set<Listener>()
        set.add(listener)
        listeners.set(topic, set)
      })

    /** Tells every instance (this one at once) that `key` of `topic` changed. */
    const publish = (topic: string, key: string) =>
      Effect.suspend(() => {
        deliver(topic, key)
        return isEmbeddedDatabase(config)
          ? Effect.void
          : // pg_notify, not the client's `notify`: NOTIFY takes no bind parameters.
            pg`select pg_notify(${CHANNEL}, ${`${topic}:${key}`})`.pipe(
              Effect.catchAll((error) => Effect.logWarning("change notice could not be sent", error))
            )
      })

    return { subscribe, publish }
  })
}) {}

export interface NoticeCache<A> {
  /** The cached value of `key` (`<scope>` or `<scope>|<rest>`), or what `load` reads (and is then kept). */
  readonly get: <E, R>(key: string, load: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The cached value of `key` if it is there and fresh (no refresh due); for synchronous hot paths. */
  readonly peek: (key: string) => A | undefined
  /** Reads `key` anew and keeps what it read (a caller that found the cached value missing something). */
  readonly reload: <E, R>(key: string, load: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Drops the entries of `scope` here at once, and in every other instance by a notice. */
  readonly changed: (scope: string) => Effect.Effect<void>
  /** Drops every entry, here and in every other instance (a change whose scope the keys do not show). */
  readonly changedAll: Effect.Effect<void>
}

/**
 * A cache for values read on hot paths (settings, routes, prices) that live
 * until a change notice on `topic` drops their scope (a workspace id), in
 * this instance or any other. An entry older than `refreshAfter` is still
 * answered while one background read replaces it, as a safety net for a
 * notice missed while listening was down; no request waits on a refresh. A
 * value read while a notice for the topic arrived is not kept, so a read
 * racing a change never pins the old value.
 */
export const makeNoticeCache = <A>(
  topic: string,
  refreshAfter: Duration.DurationInput = Duration.minutes(1)
): Effect.Effect<NoticeCache<A>, never, ChangeNotices | Scope.Scope> =>
  Effect.gen(function* () {
    const notices = yield* ChangeNotices
    const scope = yield* Effect.scope
    const refreshMillis = Duration.toMillis(refreshAfter)
    const entries = new Map<string, { value: A; loadedAt: number; refreshing: boolean }>()
    let generation = 0
    const drop = (scopeKey: string) => {
      generation += 1
      if (scopeKey === EVERYTHING) return entries.clear()
      const prefix = `${scopeKey}|`
      for (const key of entries.keys()) if (key === scopeKey || key.startsWith(prefix)) entries.delete(key)
    }
    yield* notices.subscribe(topic, drop)

    const store = (key: string, readAt: number, value: A) =>
      Effect.sync(() => {
        if (generation !== readAt) return
        if (entries.size >= 10_000) entries.clear()
        entries.set(key, { value, loadedAt: Date.now(), refreshing: false })
      })

    const get = <E, R>(key: string, load: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        const cached = entries.get(key)
        const readAt = generation
        if (cached === undefined) return Effect.tap(load, (value) => store(key, readAt, value))
        if (!cached.refreshing && Date.now() - cached.loadedAt >= refreshMillis) {
          cached.refreshing = true
          return load.pipe(
            Effect.flatMap((value) => store(key, readAt, value)),
            Effect.ensuring(Effect.sync(() => (cached.refreshing = false))),
            Effect.ignoreLogged,
            Effect.forkIn(scope),
            Effect.as(cached.value)
          )
        }
        return Effect.succeed(cached.value)
      })

    const reload = <E, R>(key: string, load: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        const readAt = generation
        return Effect.tap(load, (value) => store(key, readAt, value))
      })

    const peek = (key: string) => {
      const cached = entries.get(key)
      return cached !== undefined && Date.now() - cached.loadedAt < refreshMillis ? cached.value : undefined
    }

    return {
      get,
      peek,
      reload,
      changed: (scopeKey: string) => notices.publish(topic, scopeKey),
      changedAll: notices.publish(topic, EVERYTHING)
    }
  })
