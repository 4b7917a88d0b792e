import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import {
  ConnectError,
  createFetch,
  deadlineInterceptor,
  isConnectError,
  type LookupFunction,
} from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// A dispatcher of yours connects with undici's own connector, which fails a
// certificate that does not verify with Node's TLS error as it is. A refused
// connect was already a ConnectError through either connector; a rejected
// certificate reached the caller as that bare Error (`code:
// 'DEPTH_ZERO_SELF_SIGNED_CERT'`): not `isConnectError`, no
// `certificateRejected`, where createConnector's gives both.

// A self-signed certificate for svc.test, other.test and 127.0.0.1 (openssl, 10 years).
const cert = readFileSync(new URL('./fixtures/svc.test.cert.pem', import.meta.url))
const key = readFileSync(new URL('./fixtures/svc.test.key.pem', import.meta.url))

let closers: (() => Promise<unknown>)[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((close) => close()))
  closers = []
})

async function tlsUpstream(): Promise<number> {
  const server: Server = createServer({ cert, key }, (_req, res) => res.end('ok'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return (server.address() as AddressInfo).port
}

function agent(options: ConstructorParameters<typeof Agent>[0] = {}): Agent {
  const made = new Agent(options)
  closers.push(() => made.destroy())
  return made
}

const loopback: LookupFunction = (_name, _options, callback) =>
  callback(null, [{ address: '127.0.0.1', family: 4 }])

it('createFetch over an Agent of yours: a self-signed certificate is a CONNECT_FAILED marked certificateRejected, never retried', async () => {
  const port = await tlsUpstream()
  events = recordEgress()
  const fetch = createFetch({ dispatcher: agent() })
  const error = await rejection(fetch(`https://127.0.0.1:${port}/`))
  expect(error).toBeInstanceOf(ConnectError)
  expect(isConnectError(error)).toBe(true)
  expect(error).toMatchObject({
    code: 'CONNECT_FAILED',
    phase: 'connect',
    certificateRejected: true,
    osCode: 'DEPTH_ZERO_SELF_SIGNED_CERT',
  })
  expect((error as Error).cause).toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' })
  expect(events.retries).toHaveLength(0)
  expect(events.skipped).toMatchObject([{ reason: 'CONNECT_FAILED', why: 'not-retryable' }])
})

it('the interceptor over an Agent of yours: a certificate for another name is rejected the same way', async () => {
  const port = await tlsUpstream()
  const dispatcher = agent({ connect: { ca: cert, lookup: loopback as never } }).compose(
    deadlineInterceptor(),
  )
  const error = await rejection(request(`https://wrong.test:${port}/`, { dispatcher }))
  expect(error).toBeInstanceOf(ConnectError)
  expect(error).toMatchObject({
    code: 'CONNECT_FAILED',
    certificateRejected: true,
    osCode: 'ERR_TLS_CERT_ALTNAME_INVALID',
  })
})
