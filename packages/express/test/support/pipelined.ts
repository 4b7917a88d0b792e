import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import type { Running } from './servers.js'

/**
 * Writes `data` (requests pipelined on one connection) to `server`; the
 * socket goes in `sockets` for the caller's cleanup. `write` sends more on
 * it; `text()` half-closes it and is everything read once the server has
 * answered and ended the connection.
 */
export async function pipelined(server: Running, data: string, sockets: Socket[]) {
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
  sockets.push(socket)
  socket.on('error', () => {})
  let text = ''
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1')
  })
  const closed = once(socket, 'close')
  await once(socket, 'connect')
  socket.write(data)
  return {
    write: (more: string) => socket.write(more),
    /** Half-closes: the server ends the connection once it has answered. */
    async text() {
      socket.end()
      await closed
      return text
    },
  }
}

/** A GET for a pipeline, with a deadline header when `budgetMs` is given. */
export const pipelinedGet = (path: string, budgetMs?: number) =>
  `GET ${path} HTTP/1.1\r\nHost: x\r\n${budgetMs === undefined ? '' : `x-deadline-remaining-ms: ${budgetMs}\r\n`}\r\n`
