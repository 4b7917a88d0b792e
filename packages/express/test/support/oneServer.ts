import type { Express } from 'express'
import { type Dispatcher, request } from 'undici'
import { afterEach } from 'vitest'
import { client, listen, type Running } from './servers.js'

/**
 * One server a test, listening with the test's app and closed after it.
 * `send(app)` listens and sends GET /: `pending`, its answer, whose
 * rejection is handled (when an assertion fails first, the close cuts it:
 * no unhandled rejection). `get(app)` is the answer itself. `close()`
 * closes the server sooner, for a test that needs it gone.
 */
export function useServer(): {
  send(app: Express): Promise<{ pending: Promise<Dispatcher.ResponseData> }>
  get(app: Express): Promise<Dispatcher.ResponseData>
  close(): Promise<void>
} {
  let server: Running | undefined
  async function close() {
    await server?.close()
    server = undefined
  }
  afterEach(close)
  async function send(app: Express) {
    server = await listen(app)
    const pending = request(server.url, { dispatcher: client() })
    pending.catch(() => {})
    return { pending }
  }
  return { send, get: async (app) => (await send(app)).pending, close }
}
