import { once } from 'node:events'
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net'
import { afterEach } from 'vitest'

/** A TCP listener standing in for Redis (see `useSilentRedis`). */
export interface SilentRedis {
  url: string
  /** Connections it accepted so far. */
  connections(): number
}

/**
 * Call at the top of a file or describe: returns a starter of TCP listeners
 * standing in for Redis — each accepts, never answers, and counts who
 * connects — closed with their sockets after each test.
 */
export function useSilentRedis(): () => Promise<SilentRedis> {
  const servers: Server[] = []
  const sockets = new Set<Socket>()
  afterEach(async () => {
    for (const socket of sockets) socket.destroy()
    sockets.clear()
    await Promise.all(
      servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))),
    )
  })
  return async () => {
    let accepted = 0
    const server = createServer((socket) => {
      accepted++
      sockets.add(socket)
      socket.on('error', () => {})
    })
    servers.push(server)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    return { url: `redis://127.0.0.1:${port}`, connections: () => accepted }
  }
}
