import { once } from 'node:events'
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { tcpFaultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import {
  ConnectError,
  ConnectTimeoutError,
  createConnector,
  createFetch,
  DnsTimeoutError,
  deadlineInterceptor,
  type LookupFunction,
} from '../src/index.js'
import { rejection } from './helpers.js'

// A connect timeout did not say where the connect went ("connect timed out
// (100 ms into the attempt)", nothing else: no cause, no host), nor did a
// handshake reset ("connect failed: ECONNRESET", its cause naming no host
// either), where undici's own connect timeout names the address it tried
// and a DNS timeout names its host. A gateway calling several upstreams
// could not tell from the error which one never finished its handshake.

let server: Server | undefined
const accepted: Socket[] = []
const closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c.close()))
  for (const socket of accepted.splice(0)) socket.destroy()
  if (server) {
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** A listener that accepts and never says a word: a TLS handshake to it never completes. */
async function silentPort(): Promise<number> {
  server = createServer((socket) => accepted.push(socket))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as AddressInfo).port
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}

const toLoopback: LookupFunction = (_hostname, _options, callback) =>
  callback(null, [{ address: '127.0.0.1', family: 4 }])

it('createFetch: the ConnectTimeoutError names the host and port, in its message and as fields', async () => {
  const port = await silentPort()
  const clock = new ManualClock()
  const fetch = createFetch({ connectTimeoutMs: 100, lookup: toLoopback, clock })
  closers.push(fetch)
  using deadline = Deadline.after(30_000, { clock })
  const connected = once(server!, 'connection')
  const call = rejection(fetch(`https://svc.test:${port}/path`, { deadline }))
  await connected
  await turns(2)
  clock.advance(100)
  const error = await call
  expect(error).toBeInstanceOf(ConnectTimeoutError)
  expect(error).toMatchObject({ code: 'CONNECT_TIMEOUT', hostname: 'svc.test', port, limitMs: 100 })
  expect((error as Error).message).toMatch(
    new RegExp(`^connect timed out for svc\\.test:${port} \\(\\d+ ms into the attempt\\)$`),
  )
  expect(String((error as Error).stack)).toContain(`connect timed out for svc.test:${port}`)
})

it('the interceptor: an IP address in the URL is named so', async () => {
  const port = await silentPort()
  const clock = new ManualClock()
  const agent = new Agent({
    connect: createConnector({ connectTimeoutMs: 100, clock }),
    headersTimeout: 0,
    bodyTimeout: 0,
  })
  closers.push(agent)
  using deadline = Deadline.after(30_000, { clock })
  const connected = once(server!, 'connection')
  const call = rejection(
    request(`https://127.0.0.1:${port}/`, {
      dispatcher: agent.compose(deadlineInterceptor({ clock })),
      deadline,
    } as never),
  )
  await connected
  await turns(2)
  clock.advance(100)
  const error = await call
  expect(error).toMatchObject({ code: 'CONNECT_TIMEOUT', hostname: '127.0.0.1', port })
  expect((error as Error).message).toContain(`connect timed out for 127.0.0.1:${port} (`)
})

it('a handshake the server resets is a ConnectError naming the host and port too', async () => {
  const resetting = await tcpFaultServer({ mode: 'reset' })
  closers.push(resetting)
  const fetch = createFetch({ lookup: toLoopback, retry: false })
  closers.push(fetch)
  const error = await rejection(fetch(`https://svc.test:${resetting.port}/`))
  expect(error).toBeInstanceOf(ConnectError)
  expect(error).toMatchObject({
    code: 'CONNECT_FAILED',
    hostname: 'svc.test',
    port: resetting.port,
  })
  // ECONNRESET as a rule; the OS's code, whichever it gives, follows the place.
  expect((error as Error).message).toMatch(
    new RegExp(`^connect failed for svc\\.test:${resetting.port}: E[A-Z]+ \\(`),
  )
})

// Only the timeout this call's own phase timer raised is named. A timeout
// error given as the caller's abort reason — a fan-out stopping its other
// calls with the first one's, one from undici's own connector — is theirs:
// it was rewritten in place to name this call's target ("connect timed out
// for 127.0.0.1:<this port>", its cause naming another address; a DNS one
// "name lookup timed out for 127.0.0.1", where no lookup happened).
it.each([
  ['ConnectTimeoutError', () => new ConnectTimeoutError({ elapsedMs: 5 }), 'connect timed out'],
  ['DnsTimeoutError', () => new DnsTimeoutError({ elapsedMs: 5 }), 'name lookup timed out'],
] as const)('a %s given as the abort reason is left as it was', async (_name, make, what) => {
  const port = await silentPort()
  const fetch = createFetch({ retry: false })
  closers.push(fetch)
  const controller = new AbortController()
  const connected = once(server!, 'connection')
  const call = rejection(fetch(`https://127.0.0.1:${port}/`, { signal: controller.signal }))
  await connected
  const reason = make()
  controller.abort(reason)
  expect(await call).toBe(reason)
  expect(reason.message).toBe(`${what} (5 ms into the attempt)`)
  expect(reason.hostname).toBeUndefined()
  if (reason instanceof ConnectTimeoutError) expect(reason.port).toBeUndefined()
})

it('a DnsTimeoutError given as the abort reason mid-lookup is not named for this host', async () => {
  let looking!: () => void
  const lookingUp = new Promise<void>((resolve) => {
    looking = resolve
  })
  const lookup: LookupFunction = () => looking() // never answers
  const fetch = createFetch({ retry: false, lookup })
  closers.push(fetch)
  const controller = new AbortController()
  const call = rejection(fetch('http://other.test/', { signal: controller.signal }))
  await lookingUp
  const reason = new DnsTimeoutError({ elapsedMs: 5 })
  controller.abort(reason)
  expect(await call).toBe(reason)
  expect(reason.message).toBe('name lookup timed out (5 ms into the attempt)')
  expect(reason.hostname).toBeUndefined()
})
