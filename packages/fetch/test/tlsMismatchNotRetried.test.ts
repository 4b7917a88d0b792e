import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { ConnectError, createFetch } from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// An `https:` URL for a server that speaks plain HTTP (a port mixed up, a
// TLS-terminating proxy left out): the handshake fails with OpenSSL's
// "wrong version number" in a few ms, which read as a fast connect failure
// and was retried — the same bytes come back every time. A TLS protocol
// failure is the peer's answer, like a rejected certificate: not retried.

let server: Server | undefined
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined))
  server = undefined
})

it('an https: URL on a plain-HTTP port: one handshake, a CONNECT_FAILED not retried', async () => {
  let connections = 0
  server = createServer((_req, res) => res.end('plain'))
  server.on('connection', () => connections++)
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  events = recordEgress()
  const fetch = createFetch()
  try {
    const error = await rejection(fetch(`https://127.0.0.1:${port}/`))
    expect(error).toBeInstanceOf(ConnectError)
    expect(error).toMatchObject({ code: 'CONNECT_FAILED', phase: 'connect' })
    expect((error as Error).cause).toMatchObject({ code: 'ERR_SSL_WRONG_VERSION_NUMBER' })
    expect(events.retries).toHaveLength(0)
    expect(events.skipped).toMatchObject([{ reason: 'CONNECT_FAILED', why: 'not-retryable' }])
    expect(connections).toBe(1)
  } finally {
    await fetch.close()
  }
})
