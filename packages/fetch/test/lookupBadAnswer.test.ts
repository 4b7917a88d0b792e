import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { createFetch, DnsError, type HourglassFetch, type LookupFunction } from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// A `lookup` of one's own may answer with something that is no IP address: an
// empty string, a host name, a hole in the list. Each entry went to
// net.connect as its `host`: '' (or a missing address) connected to
// localhost — whatever listens there got the request meant for svc.test —
// and a name was looked up again by Node, past `dnsTimeoutMs`, its ENOTFOUND
// a CONNECT_FAILED sent again as a fast refused connect. An entry that is not
// an object threw inside the lookup's callback: an uncaught exception when
// it called back later, and a call left waiting for the DNS limit (for good,
// with `dnsTimeoutMs: 0`). net.connect passes over such entries, and fails
// with ERR_INVALID_IP_ADDRESS when none is left: so does the connector.

let closers: (() => Promise<void>)[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((close) => close()))
  closers = []
})

/** A server on 127.0.0.1, counting the connections it accepts. */
async function serve(): Promise<{ port: number; connections: () => number }> {
  let connections = 0
  const server = createServer((_req, res) => res.end('ok'))
  server.on('connection', () => connections++)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closers.push(async () => {
    server.closeAllConnections()
    server.close()
  })
  return { port: (server.address() as AddressInfo).port, connections: () => connections }
}

function client(lookup: LookupFunction, options: Parameters<typeof createFetch>[0] = {}) {
  const fetch: HourglassFetch = createFetch({ lookup, ...options })
  closers.push(() => fetch.close())
  return fetch
}

function answering(...entries: unknown[]): LookupFunction {
  return (_name, _options, callback) => callback(null, entries as never)
}

it('an empty address is no address: DNS_FAILED, and nothing connects to localhost', async () => {
  const server = await serve()
  events = recordEgress()
  const error = await rejection(
    client(answering({ address: '', family: 4 }))(`http://svc.test:${server.port}/`),
  )
  expect(error).toBeInstanceOf(DnsError)
  expect(error).toMatchObject({
    code: 'DNS_FAILED',
    phase: 'dns',
    hostname: 'svc.test',
    osCode: 'ERR_INVALID_IP_ADDRESS',
  })
  expect(server.connections()).toBe(0)
  expect(events.retries).toHaveLength(0)
  expect(events.skipped).toMatchObject([{ reason: 'DNS_FAILED', why: 'dns-failure' }])
})

it('a host name in the answer is not looked up again: DNS_FAILED, never retried as a refused connect', async () => {
  const server = await serve()
  events = recordEgress()
  const error = await rejection(
    client(answering({ address: 'localhost', family: 4 }))(`http://svc.test:${server.port}/`),
  )
  expect(error).toMatchObject({ code: 'DNS_FAILED', osCode: 'ERR_INVALID_IP_ADDRESS' })
  expect(server.connections()).toBe(0)
  expect(events.retries).toHaveLength(0)
})

it('entries that are no IP address are passed over: the address among them connects', async () => {
  const server = await serve()
  // autoSelectFamily off: the first address alone is tried, so it must be the IP one.
  const fetch = client(
    answering({ address: 'nowhere.invalid', family: 4 }, { address: '', family: 6 }, '127.0.0.2', {
      address: '127.0.0.1',
      family: 4,
    }),
    { autoSelectFamily: false },
  )
  const res = await fetch(`http://svc.test:${server.port}/`)
  expect(await res.text()).toBe('ok')
  expect(server.connections()).toBe(1)
})

it('a malformed entry answered later fails the call at once, with no uncaught exception', async () => {
  const server = await serve()
  const later: LookupFunction = (_name, _options, callback) =>
    setImmediate(() => callback(null, [null, undefined] as never))
  // No DNS limit: before, the throw in the callback left the call waiting for good.
  const error = await rejection(
    client(later, { dnsTimeoutMs: 0 })(`http://svc.test:${server.port}/`),
  )
  expect(error).toMatchObject({ code: 'DNS_FAILED', osCode: 'ERR_INVALID_IP_ADDRESS' })
  expect(server.connections()).toBe(0)
})

it("a family of 'IPv4' or none is read off the address", async () => {
  const server = await serve()
  const res = await client(
    answering({ address: '127.0.0.1', family: 'IPv4' }, { address: '127.0.0.1' }),
  )(`http://svc.test:${server.port}/`)
  expect(await res.text()).toBe('ok')
})

// `dns.promises.lookup` given where a callback lookup belongs: it returns a
// promise and never calls back, so every call waited out `dnsTimeoutMs`
// (and for good with 0). What its promise resolves to is the answer.
it('a lookup that returns a promise (dns.promises.lookup) is answered by what it resolves to', async () => {
  const { port, connections } = await serve()
  const lookup = (async (hostname: string) => {
    expect(hostname).toBe('svc.test')
    return [{ address: '127.0.0.1', family: 4 }]
  }) as unknown as LookupFunction
  const fetch = createFetch({ lookup, dnsTimeoutMs: 0 })
  closers.push(() => fetch.close())
  const res = await fetch(`http://svc.test:${port}/`)
  expect([res.status, await res.text()]).toEqual([200, 'ok'])
  expect(connections()).toBe(1)
})

it('an async lookup that calls back and resolves nothing is answered by its callback; one that rejects fails as DNS', async () => {
  const { port } = await serve()
  const callsBack = (async (
    _hostname: string,
    _options: unknown,
    callback: (...a: unknown[]) => void,
  ) => {
    await Promise.resolve()
    callback(null, [{ address: '127.0.0.1', family: 4 }])
  }) as unknown as LookupFunction
  const fetch = createFetch({ lookup: callsBack })
  closers.push(() => fetch.close())
  expect((await fetch(`http://svc.test:${port}/`)).status).toBe(200)

  const rejects = (async () => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND svc.test'), { code: 'ENOTFOUND' })
  }) as unknown as LookupFunction
  const failing = createFetch({ lookup: rejects, dnsTimeoutMs: 0 })
  closers.push(() => failing.close())
  const error = await rejection(failing(`http://svc.test:${port}/`))
  expect(error).toBeInstanceOf(DnsError)
  expect((error as DnsError).osCode).toBe('ENOTFOUND')
})
