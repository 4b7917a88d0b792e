import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline } from '@hourglass/core'
import { createFetch, type HourglassRequestInit } from '../../src/index.js'
import type { EgressEvents } from '../helpers.js'
import type { useCleanup } from './useCleanup.js'

/** A `Location` as the server sends it: one header, or several. */
type Location = string | string[]

export interface RedirectToOptions {
  /** The 302's body; default `'moved'`. */
  body?: string
  /** The fetch's init; default a 2 s deadline. */
  init?: HourglassRequestInit
  /** What to call instead of a fetch of the URL (e.g. `probe`). */
  call?: (url: string) => Promise<unknown>
}

export interface Redirected {
  /** What the call rejected with (or resolved to). */
  error: unknown
  /** The egress events of the call, stopped. */
  events: EgressEvents
  /** The server's origin, `http://127.0.0.1:<port>`. */
  base: string
  port: number
  /** How many requests the server answered. */
  requests: number
}

/**
 * A server on 127.0.0.1 that answers every request with a 302 to
 * `location` (given the server's origin and port, when it names them),
 * closed after the test; then a `createFetch()` of `${base}/start`, its
 * events recorded, the fetch closed, its rejection caught.
 */
export async function redirectTo(
  cleanup: ReturnType<typeof useCleanup>,
  location: Location | ((base: string, port: number) => Location),
  { body = 'moved', init, call }: RedirectToOptions = {},
): Promise<Redirected> {
  let base = ''
  let port = 0
  let requests = 0
  const server = createServer((_req, res) => {
    requests++
    res.setHeader('location', typeof location === 'function' ? location(base, port) : location)
    res.writeHead(302).end(body)
  })
  cleanup.keep({
    async close() {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  port = (server.address() as AddressInfo).port
  base = `http://127.0.0.1:${port}`
  const events = cleanup.record()
  let error: unknown
  if (call) {
    error = await call(`${base}/start`).catch((e: unknown) => e)
  } else {
    const fetch = createFetch()
    error = await fetch(`${base}/start`, init ?? { deadline: Deadline.after(2000) }).catch(
      (e: unknown) => e,
    )
    events.stop()
    await fetch.close()
  }
  events.stop()
  return { error, events, base, port, requests }
}
