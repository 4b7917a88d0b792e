import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer as createPlainServer } from 'node:http'
import { createSecureServer as createH2Server } from 'node:http2'
import { createServer, type Server } from 'node:https'
import { type AddressInfo, connect as netConnect } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  ConnectError,
  createConnector,
  createFetch,
  DnsError,
  deadlineInterceptor,
  type HourglassFetch,
  type LookupFunction,
} from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// A self-signed certificate for svc.test, other.test and 127.0.0.1 (openssl, 10 years).
const cert = readFileSync(new URL('./fixtures/svc.test.cert.pem', import.meta.url))
const key = readFileSync(new URL('./fixtures/svc.test.key.pem', import.meta.url))

interface TlsUpstream {
  port: number
  /** SNI of every handshake that completed. */
  servernames: (string | false)[]
  /** TCP connections accepted. */
  connections: number
}

let closers: (() => Promise<void>)[] = []
let events: EgressEvents | undefined

afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((close) => close()))
  closers = []
})

function client(options: Parameters<typeof createFetch>[0]): HourglassFetch {
  const fetch = createFetch(options)
  closers.push(() => fetch.close())
  return fetch
}

async function tlsUpstream(): Promise<TlsUpstream> {
  const upstream: TlsUpstream = { port: 0, servernames: [], connections: 0 }
  const server: Server = createServer({ cert, key }, (_req, res) => res.end('ok'))
  server.on('connection', () => upstream.connections++)
  server.on('secureConnection', (socket: TLSSocket) =>
    upstream.servernames.push((socket as TLSSocket & { servername: string | false }).servername),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  upstream.port = (server.address() as AddressInfo).port
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return upstream
}

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(() => server.close())
  return server
}

const loopback: LookupFunction = (_name, _options, callback) =>
  callback(null, [{ address: '127.0.0.1', family: 4 }])

describe('TLS options', () => {
  it('a certificate that fails verification is a CONNECT_FAILED marked certificateRejected, and is never retried', async () => {
    const upstream = await tlsUpstream()
    events = recordEgress()
    const error = await rejection(client({})(`https://127.0.0.1:${upstream.port}/`))
    expect(error).toBeInstanceOf(ConnectError)
    expect(error).toMatchObject({
      code: 'CONNECT_FAILED',
      certificateRejected: true,
      osCode: 'DEPTH_ZERO_SELF_SIGNED_CERT',
    })
    expect(events.retries).toHaveLength(0)
    expect(events.skipped).toMatchObject([{ why: 'not-retryable' }])
    expect(upstream.connections).toBe(1)
  })

  it('a certificate for another name is rejected the same way', async () => {
    const upstream = await tlsUpstream()
    const lookup: LookupFunction = loopback
    const error = await rejection(
      client({ lookup, tls: { ca: cert } })(`https://wrong.test:${upstream.port}/`),
    )
    expect(error).toMatchObject({
      code: 'CONNECT_FAILED',
      certificateRejected: true,
      osCode: 'ERR_TLS_CERT_ALTNAME_INVALID',
    })
    expect(upstream.connections).toBe(1)
  })

  it('a certificate the tls options trust connects', async () => {
    const upstream = await tlsUpstream()
    const res = await client({ tls: { ca: cert } })(`https://127.0.0.1:${upstream.port}/`)
    expect(await res.text()).toBe('ok')
  })

  it('tls.servername is the SNI sent (and the name verified) for a named host, as with undici', async () => {
    const upstream = await tlsUpstream()
    const fetch = client({ lookup: loopback, tls: { ca: cert, servername: 'other.test' } })
    const res = await fetch(`https://svc.test:${upstream.port}/`)
    expect(await res.text()).toBe('ok')
    expect(upstream.servernames).toEqual(['other.test'])
  })

  it('without tls.servername the URL name is the SNI', async () => {
    const upstream = await tlsUpstream()
    const res = await client({ lookup: loopback, tls: { ca: cert } })(
      `https://svc.test:${upstream.port}/`,
    )
    expect(await res.text()).toBe('ok')
    expect(upstream.servernames).toEqual(['svc.test'])
  })
})

describe('a lookup of ones own', () => {
  it('that calls back twice opens one socket, and none is left open once the call is over', async () => {
    const server = await serve({ type: 'respond', body: 'once' })
    const twice: LookupFunction = (name, options, callback) => {
      loopback(name, options, callback)
      loopback(name, options, callback)
    }
    const fetch = createFetch({ lookup: twice, retry: false })
    const res = await fetch(`http://svc.test:${server.port}/`)
    expect(await res.text()).toBe('once')
    await fetch.close()
    await server.idle()
    expect(server.totalConnections).toBe(1)
  })

  it('that throws is a DNS_FAILED carrying what it threw', async () => {
    const boom = new Error('resolver misconfigured')
    const throwing: LookupFunction = () => {
      throw boom
    }
    const error = await rejection(client({ lookup: throwing })('http://svc.test:8080/'))
    expect(error).toBeInstanceOf(DnsError)
    expect(error).toMatchObject({ code: 'DNS_FAILED', phase: 'dns', hostname: 'svc.test' })
    expect((error as Error).cause).toBe(boom)
  })
})

describe("the Agent's own connect options", () => {
  it("an Agent's localAddress is the address the connection leaves from, as with undici's connector", async () => {
    const seenFrom: (string | undefined)[] = []
    const server = createPlainServer((req, res) => {
      seenFrom.push(req.socket.remoteAddress)
      res.end('ok')
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    closers.push(async () => {
      server.closeAllConnections()
      server.close()
    })
    const { port } = server.address() as AddressInfo
    // Egress from a chosen interface (an allow-listed source address): undici passes it to the connector.
    const agent = new Agent({ connect: createConnector(), localAddress: '127.0.0.2' })
    closers.push(() => agent.close())
    const named = new Agent({
      connect: createConnector({ lookup: loopback }),
      localAddress: '127.0.0.2',
    })
    closers.push(() => named.close())
    await (await request(`http://127.0.0.1:${port}/`, { dispatcher: agent })).body.text()
    await (await request(`http://svc.test:${port}/`, { dispatcher: named })).body.text()
    // Before: from 127.0.0.1, the Agent's localAddress ignored.
    expect(seenFrom).toEqual(['127.0.0.2', '127.0.0.2'])
  })

  it("a localAddress of one family connects a name that has both, from that family (undici's fails: bind EINVAL)", async () => {
    const seenFrom: (string | undefined)[] = []
    const server = createPlainServer((req, res) => {
      seenFrom.push(req.socket.remoteAddress)
      res.end('ok')
    })
    server.listen(0, '::')
    await once(server, 'listening')
    closers.push(async () => {
      server.closeAllConnections()
      server.close()
    })
    const { port } = server.address() as AddressInfo
    const dualStack: LookupFunction = (_name, _options, callback) =>
      callback(null, [
        { address: '::1', family: 6 },
        { address: '127.0.0.1', family: 4 },
      ])
    // The same answer with the families named as Node 18.0–18.3's
    // dns.lookup named them, and with none: read off the addresses.
    const named = (family: (n: 4 | 6) => unknown): LookupFunction =>
      ((_name: string, _options: unknown, callback: (e: null, a: unknown) => void) =>
        callback(null, [
          { address: '::1', family: family(6) },
          { address: '127.0.0.1', family: family(4) },
        ])) as unknown as LookupFunction
    for (const lookup of [dualStack, named((n) => `IPv${n}`), named(() => undefined)]) {
      const agent = new Agent({
        connect: createConnector({ lookup }),
        localAddress: '127.0.0.2',
      })
      closers.push(() => agent.close())
      const res = await request(`http://svc.test:${port}/`, { dispatcher: agent })
      expect(await res.body.text()).toBe('ok')
    }
    expect(seenFrom).toEqual(['::ffff:127.0.0.2', '::ffff:127.0.0.2', '::ffff:127.0.0.2'])
  })

  it("an Agent's allowH2 offers HTTP/2 as undici's connector does (ALPN h2); without it, HTTP/1.1", async () => {
    // A server that speaks both, and says which one each request came over.
    const server = createH2Server({ cert, key, allowHTTP1: true }, (req, res) => {
      res.end(req.httpVersion)
    })
    const sessions = new Set<{ destroy(): void }>()
    server.on('session', (session) => sessions.add(session))
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    closers.push(async () => {
      for (const session of sessions) session.destroy()
      await new Promise((resolve) => server.close(resolve))
    })
    const url = `https://svc.test:${(server.address() as AddressInfo).port}/`
    const versions: string[] = []
    for (const allowH2 of [true, false]) {
      // undici hands a connector function the Agent's allowH2; before, ours
      // offered http/1.1 alone, and `allowH2: true` was dropped without a word.
      const agent = new Agent({
        allowH2,
        connect: createConnector({ lookup: loopback, tls: { ca: cert } }),
      })
      closers.push(() => agent.close())
      const res = await request(url, { dispatcher: agent.compose(deadlineInterceptor()) })
      versions.push(await res.body.text())
    }
    expect(versions).toEqual(['2.0', '1.1'])
  })

  it("undici's httpSocket (a tunnel a proxy opened) carries the TLS connection: no lookup, no socket of its own", async () => {
    const upstream = await tlsUpstream()
    let lookups = 0
    const counting: LookupFunction = (name, options, callback) => {
      lookups++
      loopback(name, options, callback)
    }
    const inner = createConnector({ lookup: counting, tls: { ca: cert } })
    // What ProxyAgent does after its CONNECT: the tunnel's socket, handed on for TLS.
    const tunnelling = new Agent({
      connect: (opts, callback) => {
        const tunnel = netConnect(upstream.port, '127.0.0.1')
        tunnel.once('connect', () => inner({ ...opts, httpSocket: tunnel }, callback))
      },
    })
    closers.push(() => tunnelling.close())
    const res = await request(`https://svc.test:${upstream.port}/`, { dispatcher: tunnelling })
    expect(await res.body.text()).toBe('ok')
    expect([upstream.connections, lookups, upstream.servernames]).toEqual([1, 0, ['svc.test']])
  })

  it('an httpSocket for a plain http origin is refused, as undici refuses it (it can only carry TLS)', async () => {
    const tunnel = netConnect(9, '127.0.0.1')
    tunnel.on('error', () => {})
    closers.push(async () => {
      tunnel.destroy()
    })
    const error = await new Promise<Error | null>((resolve) =>
      createConnector()(
        {
          hostname: '127.0.0.1',
          host: '127.0.0.1:9',
          protocol: 'http:',
          port: '9',
          httpSocket: tunnel,
        },
        (...args) => resolve(args[0]),
      ),
    )
    expect(error?.message).toMatch(/httpSocket can only be given for https/)
  })
})
