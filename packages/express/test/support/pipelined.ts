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

/**
 * `GET /first`, then a pipelined `GET /next` that closes the connection:
 * every byte the server sends until it closes.
 */
export async function firstThenNext(url: string): Promise<string> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  await once(socket, 'connect')
  let received = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    received += chunk
  })
  socket.write(
    `${pipelinedGet('/first')}GET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  )
  await once(socket, 'close')
  return received
}
