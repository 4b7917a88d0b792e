import { once } from 'node:events'
import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Listening {
  url: string
  port: number
  server: Server
  /** Open TCP connections right now. */
  connections(): Promise<number>
  close(): Promise<void>
}

/** Serve `handler` (an Express app) on 127.0.0.1, port 0; `close` drops every connection. */
export async function listen(handler: RequestListener): Promise<Listening> {
  const server = createServer(handler)
  server.on('connection', (s) => {
    ;(s as unknown as { createdAt: number }).createdAt = performance.now()
  })
  // A deep accept queue: Node's default of 511 drops SYNs when 1,000 clients connect at once,
  // and a dropped SYN is retried by the kernel after 1 s, then 3 s — latency that is not ours.
  server.listen({ port: 0, host: '127.0.0.1', backlog: 2048 })
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    connections: () =>
      new Promise((resolve, reject) =>
        server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      ),
    async close() {
      const closed = once(server, 'close')
      server.closeAllConnections()
      server.close()
      await closed
    },
  }
}
