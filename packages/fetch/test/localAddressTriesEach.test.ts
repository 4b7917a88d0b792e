import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, type LookupFunction } from '../src/index.js'
import { rejection } from './helpers.js'

// A name with several addresses is tried address by address, the first that
// refuses passed over (`connectTimeoutMs`: "a name with several addresses
// tries them in turn"). The connector left that to Node's Happy Eyeballs,
// which Node turns off when a `localAddress` is set, asking the lookup for
// one address: only the first was tried, and a retry tried it again. The
// loopback range stands in for a host's interfaces: 127.0.0.2 refuses (the
// server listens on 127.0.0.1 alone), 127.0.0.5 is the source address.

let closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.map((close) => close()))
  closers = []
})

async function serve(): Promise<{ port: number; seenFrom: (string | undefined)[] }> {
  const seenFrom: (string | undefined)[] = []
  const server = createServer((req, res) => {
    seenFrom.push(req.socket.remoteAddress)
    res.end('ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push(async () => {
    server.closeAllConnections()
    server.close()
  })
  return { port: (server.address() as AddressInfo).port, seenFrom }
}

function answering(...addresses: string[]): LookupFunction {
  return (_name, _options, callback) =>
    callback(
      null,
      addresses.map((address) => ({ address, family: 4 })),
    )
}

function agentWith(lookup: LookupFunction, localAddress: string): Agent {
  const agent = new Agent({ connect: createConnector({ lookup }), localAddress })
  closers.push(() => agent.close())
  return agent
}

it('with a localAddress, an address that refuses is passed over for the next one', async () => {
  const { port, seenFrom } = await serve()
  const agent = agentWith(answering('127.0.0.2', '127.0.0.1'), '127.0.0.5')
  // Before: CONNECT_FAILED, ECONNREFUSED 127.0.0.2, and 127.0.0.1 never tried.
  const res = await request(`http://svc.test:${port}/`, { dispatcher: agent })
  expect(await res.body.text()).toBe('ok')
  expect(seenFrom).toEqual(['127.0.0.5'])
})

it('with a localAddress, every address refusing fails the connect with the last one tried', async () => {
  const { port } = await serve()
  const agent = agentWith(answering('127.0.0.2', '127.0.0.3'), '127.0.0.5')
  const error = await rejection(request(`http://svc.test:${port}/`, { dispatcher: agent }))
  expect(error).toMatchObject({ code: 'CONNECT_FAILED', osCode: 'ECONNREFUSED' })
  // Before: 127.0.0.2, the first, the only one tried.
  expect(((error as Error).cause as { address?: string }).address).toBe('127.0.0.3')
})
