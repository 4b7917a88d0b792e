import { once } from 'node:events'
import { connect, type Socket } from 'node:net'

/**
 * Sends `text` on a new connection to `url`'s port; resolves everything
 * received until the server closes it. The socket is pushed to `sockets`,
 * for the test's afterEach to destroy.
 */
export async function rawExchange(url: string, text: string, sockets: Socket[]): Promise<string> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  sockets.push(socket)
  await once(socket, 'connect')
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  socket.on('error', () => {})
  const closed = once(socket, 'close')
  socket.write(text)
  await closed
  return Buffer.concat(chunks).toString('latin1')
}

/** A header of a raw answer's head, by name (any case), or undefined. */
export function rawHeaderOf(answer: string, name: string): string | undefined {
  const head = answer.slice(0, answer.indexOf('\r\n\r\n'))
  return new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1]
}
