/** Loopback servers and a scripted resolver for the outbound guard's tests (no traffic leaves loopback). */
import { Deferred, Effect } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net"
import type { HostResolver, ResolvedAddress } from "../../src/platform/OutboundGuard.js"

/** A resolver answering from `answers` per host, one list per call (the last repeats); counts calls. */
export const scriptedResolver = (answers: Record<string, ReadonlyArray<ReadonlyArray<string>>>) => {
  const calls: Array<string> = []
  const resolver: HostResolver = {
    resolve: (host) => {
      calls.push(host)
      const script = answers[host]
      if (script === undefined)
        return Promise.reject(Object.assign(new Error(`ENOTFOUND ${host}`), { code: "ENOTFOUND" }))
      const seen = calls.filter((name) => name === host).length
      const addresses = script[Math.min(seen, script.length) - 1]!
      return Promise.resolve(
        addresses.map((address): ResolvedAddress => ({ address, family: address.includes(":") ? 6 : 4 }))
      )
    }
  }
  return { resolver, calls }
}

export interface SeenRequest {
  readonly path: string
  readonly headers: IncomingHttpHeaders
}

const listen = <A>(handler: Parameters<typeof createServer>[1], extra: (port: number) => A) =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly close: () => void } & A>((resume) => {
      const server = createServer(handler)
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as AddressInfo).port
        resume(
          Effect.succeed({
            port,
            close: () => {
              server.closeAllConnections()
              server.close()
            },
            ...extra(port)
          })
        )
      })
    }),
    (server) => Effect.sync(server.close)
  )

/** A loopback server that sends its answer's head at once, then one byte every 50 ms; `sent` bytes when it was cut. */
export const tricklingServer = () =>
  Effect.flatMap(Deferred.make<number>(), (cutAfter) =>
    listen(
      (request, response) => {
        request.resume()
        let sent = 0
        response.writeHead(200, { "content-type": "application/json", "content-length": "100000" })
        const drip = setInterval(() => {
          sent += 1
          response.write(" ")
        }, 50)
        response.once("close", () => {
          clearInterval(drip)
          Deferred.unsafeDone(cutAfter, Effect.succeed(sent))
        })
      },
      () => ({ cutAfter: Deferred.await(cutAfter) })
    )
  )

/** A loopback HTTP server answering `status` (with a `location` when given) to every request; records them. */
export const loopbackServer = (status: number, location?: string) => {
  const seen: Array<SeenRequest> = []
  return listen(
    (request, response) => {
      seen.push({ path: request.url ?? "", headers: request.headers })
      request.resume()
      request.on("end", () => {
        response.writeHead(status, {
          "content-type": "application/json",
          ...(location === undefined ? {} : { location })
        })
        response.end("{}")
      })
    },
    () => ({ seen })
  )
}

/**
 * A loopback server whose answer is `totalBytes` of JSON-looking text, written as the client reads it.
 * `closedEarly` completes with the bytes sent when the client closed the connection before the end.
 */
export const bigAnswerServer = (totalBytes: number) =>
  Effect.flatMap(Deferred.make<number>(), (closedEarly) => {
    const chunk = Buffer.alloc(64 * 1024, "a")
    return listen(
      (request, response) => {
        request.resume()
        let sent = 0
        response.writeHead(200, { "content-type": "application/json" })
        response.write('{"reply":"')
        const pump = () => {
          while (sent < totalBytes) {
            sent += chunk.byteLength
            if (!response.write(chunk)) return void response.once("drain", pump)
          }
          response.end('"}')
        }
        response.on("close", () => {
          if (sent < totalBytes) Deferred.unsafeDone(closedEarly, Effect.succeed(sent))
        })
        pump()
      },
      () => ({ closedEarly: Deferred.await(closedEarly) })
    )
  })

/** A loopback TCP listener that only counts the connections it gets. */
export const connectionCounter = Effect.acquireRelease(
  Effect.async<{ readonly port: number; readonly connections: () => number; readonly close: () => void }>((resume) => {
    const sockets: Array<Socket> = []
    const listener = createTcpServer((socket) => {
      sockets.push(socket)
      socket.destroy()
    })
    listener.listen(0, "127.0.0.1", () =>
      resume(
        Effect.succeed({
          port: (listener.address() as AddressInfo).port,
          connections: () => sockets.length,
          close: () => listener.close()
        })
      )
    )
  }),
  (counter) => Effect.sync(counter.close)
)
