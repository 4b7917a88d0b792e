import { once } from 'node:events'
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A bare node:http server on loopback (for what the fakes do not do); closed with `close()`. */
export async function rawServer(
  handler: RequestListener,
): Promise<{ baseURL: string; close(): void }> {
  const server = createServer(handler)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    close() {
      server.closeAllConnections()
      server.close()
    },
  }
}
