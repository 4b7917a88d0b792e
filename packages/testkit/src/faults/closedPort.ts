import type { AddressInfo } from 'node:net'
import { createServer } from 'node:net'

/**
 * A loopback port nothing listens on (bound, read, then released): connecting
 * to it is refused at once. Another process could in theory take it in
 * between; on a test machine that is vanishingly rare.
 */
export async function closedPort(host = '127.0.0.1'): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
