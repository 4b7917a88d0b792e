import type { AddressInfo } from 'node:net'
import { connect, createServer } from 'node:net'

/**
 * Where the ports come from: below every system's ephemeral range (Linux
 * 32768–60999, macOS and Windows 49152–65535), from which `listen(0)` —
 * every test server, every fake — takes its ports, and above the
 * privileged ones, so a caller may still start a server on it later (a
 * Redis that comes up late).
 */
const FIRST = 20_000
const SPAN = 10_000
const TRIES = 20

/**
 * A loopback port nothing listens on: connecting to it is refused at once.
 * One the OS gave a server just closed (as this did) is the next
 * `listen(0)`'s to take: with four test files at a time starting servers, a
 * fetch meant to be refused reached another file's server and failed
 * parsing its answer. Picked at random below the ephemeral range and
 * checked refused, so no `listen(0)` can take it meanwhile; the old way if
 * none of 20 is (a machine serving that whole range).
 */
export async function closedPort(host = '127.0.0.1'): Promise<number> {
  // Bound first: a host this machine cannot bind (`::1` without IPv6) is a
  // rejection naming why, as before; its port is the fallback.
  const fallback = await releasedPort(host)
  for (let i = 0; i < TRIES; i++) {
    const port = FIRST + Math.floor(Math.random() * SPAN)
    if (await refused(host, port)) return port
  }
  return fallback
}

async function releasedPort(host: string): Promise<number> {
  const server = createServer()
  // A host it cannot bind is a rejection, not an uncaught 'error' event and
  // a promise that never settles.
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

/** Whether a connection to `host:port` is refused (not accepted, nor anything else). */
function refused(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host)
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', (error: NodeJS.ErrnoException) => {
      socket.destroy()
      resolve(error.code === 'ECONNREFUSED')
    })
  })
}
