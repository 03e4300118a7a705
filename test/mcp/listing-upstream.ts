/**
 * A raw upstream on loopback for listings an SDK server would not send: it answers every request with a
 * `tools/list` result of `tools` (whatever the test sets), under the request's id.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

export interface ListingUpstream {
  readonly url: string
  /** What the next listing answers. */
  tools: ReadonlyArray<unknown>
  readonly close: () => void
}

export const startListingUpstream = async (): Promise<ListingUpstream> => {
  const server = createServer((incoming, response) => {
    const chunks: Array<Buffer> = []
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
    incoming.on("end", () => {
      const sent = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { readonly id: number }
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify({ jsonrpc: "2.0", id: sent.id, result: { tools: upstream.tools } }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const upstream: ListingUpstream = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    tools: [],
    close: () => {
      server.closeAllConnections()
      server.close()
    }
  }
  return upstream
}
