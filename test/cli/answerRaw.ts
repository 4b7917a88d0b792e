import { once } from 'node:events'
import { type AddressInfo, createServer } from 'node:net'
import { onTestFinished } from 'vitest'
import { runMain } from './runMain.js'

/**
 * A loopback TCP server that answers each request with `reply` as given,
 * bytes no HTTP server library would write (a Latin-1 header, a body its
 * Content-Encoding does not decode); closed when the test ends. Its URL.
 */
export async function answerRaw(reply: string | Buffer): Promise<string> {
  const server = createServer((socket) => {
    socket.on('error', () => {})
    socket.once('data', () => socket.end(reply))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  onTestFinished(async () => {
    await new Promise((resolve) => server.close(resolve))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
}

/** `hourglass probe <url>` once, in process: no warm-up, one sample. */
export function probeOnce(url: string) {
  return runMain(['probe', url, '--warmup', '0', '--samples', '1'])
}
