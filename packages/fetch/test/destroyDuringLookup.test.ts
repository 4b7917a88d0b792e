import { once } from 'node:events'
import { createServer as createHttpServer } from 'node:http'
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net'
import { Agent, type buildConnector, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { CountingClock, rejection } from './helpers.js'

// undici does not tell a connector that its client was destroyed: it errors
// the queued request (ClientDestroyedError) and throws away the socket the
// connector hands it later. The attempt that asked for the connection ended
// then without being stopped, so the connector never heard of it — and with
// its limits gone with the attempt, a lookup that answered afterwards opened
// a connection nobody would use, with no timer on it: an https one whose
// server never finished the handshake stayed open, holding the process up.
// The lookups here answer only when the test releases them.

let server: Server | undefined
const accepted: Socket[] = []
afterEach(async () => {
  for (const socket of accepted.splice(0)) socket.destroy()
  if (server) {
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** A TCP server that accepts and never says a word (no HTTP answer, no TLS handshake). */
async function silent(): Promise<number> {
  server = createServer((socket) => {
    accepted.push(socket)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as AddressInfo).port
}

/**
 * The connections the server has accepted before one of our own, opened
 * now: a connect the connector started earlier reaches it first.
 */
async function acceptedBeforeNow(port: number): Promise<number> {
  const probe = connect(port, '127.0.0.1')
  await once(probe, 'connect')
  const from = probe.localPort
  const mine = (socket: Socket) => socket.remotePort === from
  while (!accepted.some(mine)) await once(server!, 'connection')
  probe.destroy()
  return accepted.findIndex(mine)
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** A lookup that answers 127.0.0.1 when `release()` is called. */
function heldLookup() {
  let started: () => void = () => {}
  const asked = new Promise<void>((resolve) => {
    started = resolve
  })
  let answer: ((error: null, addresses: { address: string; family: number }[]) => void) | undefined
  return {
    asked,
    lookup: (_host: string, _options: unknown, callback: NonNullable<typeof answer>) => {
      answer = callback
      started()
    },
    release: () => answer?.(null, [{ address: '127.0.0.1', family: 4 }]),
  }
}

describe('a dispatcher destroyed while the name is still being looked up', () => {
  it.each(['http', 'https'])(
    'fetch.dispatcher.destroy(): the call fails with ClientDestroyedError, and when the name answers no %s connection is opened, no timer left',
    async (scheme) => {
      const port = await silent()
      const clock = new CountingClock()
      const held = heldLookup()
      const fetch = createFetch({ lookup: held.lookup as never, clock, retry: false })

      const call = rejection(fetch(`${scheme}://slow-name.test:${port}/`))
      await held.asked
      await fetch.dispatcher.destroy()
      expect(await call).toMatchObject({ code: 'UND_ERR_DESTROYED' })

      held.release()
      expect(await acceptedBeforeNow(port)).toBe(0)
      expect(clock.pending).toBe(0)
    },
  )

  it('the connect callback gets the destroy error, not a socket', async () => {
    const port = await silent()
    const clock = new CountingClock()
    const held = heldLookup()
    const options = { lookup: held.lookup as never, clock }
    const connector = createConnector(options)
    const given: (Error | object | null)[] = []
    const watched: buildConnector.connector = (opts, callback) =>
      connector(opts, (error, socket) => {
        given.push(error ?? socket)
        ;(callback as (e: Error | null, s: unknown) => void)(error, socket)
      })
    const agent = new Agent({ connect: watched })
    const dispatcher = agent.compose(deadlineInterceptor(options))

    const pending = rejection(request(`http://slow-name.test:${port}/`, { dispatcher }))
    await held.asked
    await agent.destroy()
    const error = await pending
    expect(error).toMatchObject({ code: 'UND_ERR_DESTROYED' })

    expect(given).toEqual([error])
    held.release()
    expect(given).toEqual([error])
    expect(await acceptedBeforeNow(port)).toBe(0)
    expect(clock.pending).toBe(0)
  })

  it('destroyed while the TLS handshake is pending, the socket is closed, not left connecting with no timer', async () => {
    const port = await silent()
    const clock = new CountingClock()
    const fetch = createFetch({ clock, retry: false })
    const call = rejection(fetch(`https://127.0.0.1:${port}/`))
    if (accepted.length === 0) await once(server!, 'connection')
    const peer = accepted[0] as Socket
    const closed = once(peer, 'close').then(() => 'closed')
    await fetch.dispatcher.destroy()
    expect(await call).toMatchObject({ code: 'UND_ERR_DESTROYED' })
    expect(await Promise.race([closed, turns(1000).then(() => 'still open')])).toBe('closed')
    expect(clock.pending).toBe(0)
  })

  it('fetch.close() is no destroy: a call whose name is still being looked up is sent once it answers', async () => {
    const http = createHttpServer((_req, res) => res.end('ok'))
    http.listen(0, '127.0.0.1')
    await once(http, 'listening')
    const { port } = http.address() as AddressInfo
    const clock = new CountingClock()
    const held = heldLookup()
    const fetch = createFetch({ lookup: held.lookup as never, clock, retry: false })
    try {
      const call = fetch(`http://slow-name.test:${port}/`).then((res) => res.text())
      await held.asked
      const closed = fetch.close()
      held.release()
      expect(await call).toBe('ok')
      await closed
      expect(clock.pending).toBe(0)
    } finally {
      http.closeAllConnections()
      http.close()
    }
  })
})
