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
import { Duration, Effect, Schedule, type Scope, Stream } from "effect"
import { AppConfig, isEmbeddedDatabase } from "./Config.js"

const CHANNEL = "guardrail_changes"
/** Every cache's entries when listening (re)starts, as nothing heard meanwhile can be trusted. */
const EVERYTHING = "*"

type Listener = (key: string) => void

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

    if (!isEmbeddedDatabase(config)) {
      yield* pg.listen(CHANNEL).pipe(
        Stream.runForEach((payload) =>
          Effect.sync(() => {
            const split = payload.indexOf(":")
            if (split > 0) deliver(payload.slice(0, split), payload.slice(split + 1))
          })
        ),
        Effect.onExit(() => Effect.sync(deliverEverywhere)),
        Effect.tapErrorCause((cause) => Effect.logWarning("change notices: listening failed; retrying", cause)),
        Effect.retry(
          Schedule.exponential(Duration.millis(200)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(5))))
        ),
        Effect.forkScoped
      )
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
