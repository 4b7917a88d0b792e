import type { AddressInfo } from 'node:net'
import { createServer } from 'node:net'

/**
 * A loopback port nothing listens on (bound, read, then released): connecting
 * to it is refused at once. Another process could in theory take it in
 * between; on a test machine that is vanishingly rare.
 */
export async function closedPort(host = '127.0.0.1'): Promise<number> {
  const server = createServer()
  // A host it cannot bind (`::1` where there is no IPv6) is a rejection, not
  // an uncaught 'error' event and a promise that never settles.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
