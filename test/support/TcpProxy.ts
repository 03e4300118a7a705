/**
 * A loopback TCP proxy to put between the service and a server it depends on
 * (PostgreSQL): tests make the server unreachable without touching it, which
 * matters because the infrastructure is shared. `pause` stops accepting and
 * cuts every open connection (the service sees its database go away);
 * `resume` listens again on the same port; `dropConnections` cuts the open
 * connections but keeps accepting (a network blip); `stopAccepting` refuses
 * new connections and leaves the open ones; `dropConnectionFrom` cuts the one
 * connection whose upstream side has that local port (PostgreSQL shows it as
 * `pg_stat_activity.client_port`: one backend's connection dies); `freeze`
 * keeps every connection open but swallows every byte both ways, new ones
 * too (the server gone without a reset: a half-open connection), and `thaw`
 * cuts the frozen connections and forwards again. `loseCommitAnswer` loses
 * one commit's acknowledgement: the next connection that sends `marker` and
 * then a COMMIT (in one transaction) has the COMMIT delivered (the server
 * commits) and the answer swallowed; the service waits for it until the test
 * cuts that connection. `holdCommit` holds one commit instead: the next
 * connection that sends `marker` and then a COMMIT has the COMMIT kept back
 * (the transaction stays open, its writes unseen by others) until the test
 * releases it. `muffleNotices` drops every asynchronous notification on the
 * connections that sent `LISTEN` (change notices lost in transit).
 */
import { Effect } from "effect"
import { createServer, type Server, type Socket, connect } from "node:net"

export interface TcpProxy {
  readonly port: number
  /** `url` with its host and port replaced by the proxy's. */
  readonly through: (url: string) => string
  readonly pause: Effect.Effect<void>
  readonly resume: Effect.Effect<void>
  readonly dropConnections: Effect.Effect<void>
  readonly freeze: Effect.Effect<void>
  readonly thaw: Effect.Effect<void>
  readonly stopAccepting: Effect.Effect<void>
  readonly dropConnectionFrom: (upstreamLocalPort: number) => Effect.Effect<boolean>
  /** The local ports of the proxy's open upstream connections. */
  readonly upstreamPorts: Effect.Effect<ReadonlyArray<number>>
  /** Arms the lost acknowledgement above: `committed` completes once the COMMIT went through, `cut` ends the wait. */
  readonly loseCommitAnswer: (
    marker: string
  ) => Effect.Effect<{ readonly committed: Effect.Effect<void>; readonly cut: Effect.Effect<void> }>
  /** Arms the held commit above: `held` completes once the COMMIT is held, `release` sends it on. */
  readonly holdCommit: (
    marker: string
  ) => Effect.Effect<{ readonly held: Effect.Effect<void>; readonly release: Effect.Effect<void> }>
  readonly muffleNotices: Effect.Effect<void>
  /** Connections open through the proxy now (client and upstream sockets count as one). */
  readonly openConnections: Effect.Effect<number>
}

const listen = (server: Server, port: number) =>
  new Promise<number>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject)
      const address = server.address()
      resolve(typeof address === "object" && address !== null ? address.port : port)
    })
  })

/** A proxy to `target` (host:port on loopback) for the life of the scope. */
export const tcpProxy = (target: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const open = new Set<Socket>()
      const upstreams = new Set<Socket>()
      const frozen = { now: false }
      const commitCut: { marker: string | undefined; fired: (client: Socket) => void } = {
        marker: undefined,
        fired: () => {}
      }
      const commitHold: { marker: string | undefined; fired: (send: () => void) => void } = {
        marker: undefined,
        fired: () => {}
      }
      const notices = { muffled: false }
      const server = createServer((client) => {
        const upstream = connect(target.port, target.host)
        upstreams.add(upstream)
        upstream.on("close", () => upstreams.delete(upstream))
        const pair = [client, upstream]
        // Set once this connection's COMMIT went through: the server's answer is swallowed, and the server closes its
        // side when it reads the end (cutting it could drop the COMMIT before the server has read it).
        let cut = false
        let marked = false
        let heldMarked = false
        let listening = false
        for (const socket of pair) {
          open.add(socket)
          socket.on("error", () => pair.forEach((each) => each.destroy()))
          socket.on("close", () => {
            open.delete(socket)
            if (!cut) pair.forEach((each) => each.destroy())
          })
        }
        client.on("data", (chunk: Buffer) => {
          if (frozen.now || cut) return
          const text = chunk.toString("latin1")
          if (text.includes("LISTEN")) listening = true
          const holdMarker = commitHold.marker
          if (holdMarker !== undefined) {
            if (text.includes("BEGIN")) heldMarked = false
            else if (text.includes(holdMarker)) heldMarked = true
            else if (heldMarked && text.includes("COMMIT")) {
              commitHold.marker = undefined
              commitHold.fired(() => upstream.write(chunk))
              return
            }
          }
          const marker = commitCut.marker
          if (marker !== undefined) {
            if (text.includes("BEGIN")) marked = false
            else if (text.includes(marker)) marked = true
            else if (marked && text.includes("COMMIT")) {
              commitCut.marker = undefined
              cut = true
              upstream.end(chunk)
              commitCut.fired(client)
              return
            }
          }
          upstream.write(chunk)
        })
        // A NotificationResponse ('A') comes on its own while the listening connection is idle.
        const muffled = (chunk: Buffer) => notices.muffled && listening && chunk[0] === 0x41
        upstream.on("data", (chunk: Buffer) => frozen.now || cut || muffled(chunk) || client.write(chunk))
      })
      const port = await listen(server, 0)
      const dropAll = () => {
        for (const socket of open) socket.destroy()
        open.clear()
      }
      let listening = true
      return {
        server,
        port,
        dropAll,
        count: () => open.size / 2,
        frozen,
        commitCut,
        commitHold,
        notices,
        upstreams,
        isListening: () => listening,
        setListening: (on: boolean) => (listening = on)
      }
    }),
    ({ server, dropAll }) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            dropAll()
            server.close(() => resolve())
            if (!server.listening) resolve()
          })
      )
  ).pipe(
    Effect.map(
      ({
        server,
        port,
        dropAll,
        count,
        frozen,
        commitCut,
        commitHold,
        notices,
        upstreams,
        isListening,
        setListening
      }): TcpProxy => ({
        port,
        through: (url) => {
          const parsed = new URL(url)
          parsed.hostname = "127.0.0.1"
          parsed.port = String(port)
          return parsed.toString()
        },
        pause: Effect.promise(
          () =>
            new Promise<void>((resolve) => {
              dropAll()
              if (!isListening()) return resolve()
              setListening(false)
              server.close(() => resolve())
            })
        ),
        stopAccepting: Effect.sync(() => {
          if (!isListening()) return
          setListening(false)
          server.close()
        }),
        dropConnectionFrom: (upstreamLocalPort) =>
          Effect.sync(() => {
            const found = [...upstreams].find((socket) => socket.localPort === upstreamLocalPort)
            found?.destroy()
            return found !== undefined
          }),
        upstreamPorts: Effect.sync(() =>
          [...upstreams].flatMap((socket) => (socket.localPort === undefined ? [] : [socket.localPort]))
        ),
        resume: Effect.promise(async () => {
          if (isListening()) return
          await listen(server, port)
          setListening(true)
        }),
        dropConnections: Effect.sync(dropAll),
        freeze: Effect.sync(() => {
          frozen.now = true
        }),
        thaw: Effect.sync(() => {
          dropAll()
          frozen.now = false
        }),
        loseCommitAnswer: (marker) =>
          Effect.sync(() => {
            const held = new Promise<Socket>((resolve) => {
              commitCut.fired = resolve
            })
            commitCut.marker = marker
            return {
              committed: Effect.promise(() => held),
              cut: Effect.promise(() => held.then((client) => void client.destroy()))
            }
          }),
        holdCommit: (marker) =>
          Effect.sync(() => {
            const held = new Promise<() => void>((resolve) => {
              commitHold.fired = resolve
            })
            commitHold.marker = marker
            return {
              held: Effect.promise(() => held),
              release: Effect.promise(() => held.then((send) => send()))
            }
          }),
        muffleNotices: Effect.sync(() => {
          notices.muffled = true
        }),
        openConnections: Effect.sync(count)
      })
    )
  )
